/** CRI timestamps are int64 nanoseconds; proto-loader hands int64 over as decimal strings. */

export function nowNanos(): string {
  return (BigInt(Date.now()) * 1_000_000n + BigInt(Number(process.hrtime.bigint() % 1_000_000n))).toString();
}

/** Docker's RFC 3339 times keep nanoseconds ("2026-11-22T11:10:43.123456789Z"); Date would drop them. */
export function rfc3339ToNanos(value: string | undefined): string {
  if (!value || value.startsWith('0001-01-01')) return '0';
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(value);
  if (!m) {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? '0' : (BigInt(ms) * 1_000_000n).toString();
  }
  const secs = BigInt(Math.floor(Date.parse(`${m[1]}${m[3]}`) / 1000));
  const frac = BigInt((m[2] ?? '').padEnd(9, '0').slice(0, 9));
  return (secs * 1_000_000_000n + frac).toString();
}

export function secondsToNanos(seconds: number): string {
  return (BigInt(Math.trunc(seconds)) * 1_000_000_000n).toString();
}
