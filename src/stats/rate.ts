/** One reading of a cumulative CPU counter, with the monotonic time it was taken at. */
export interface CpuPoint {
  /** process.hrtime.bigint(): wall-clock jumps must not produce bogus rates. */
  at: bigint;
  cpuNanos: bigint;
}

/**
 * CPU use between two readings, in nanocores (1e9 = one core busy). Undefined
 * when no rate can be told: no time passed, or the counter went backwards (the
 * container restarted into a fresh cgroup).
 */
export function nanoCores(prev: CpuPoint, cur: CpuPoint): number | undefined {
  const dt = cur.at - prev.at;
  if (dt <= 0n || cur.cpuNanos < prev.cpuNanos) return undefined;
  return Number(((cur.cpuNanos - prev.cpuNanos) * 1_000_000_000n) / dt);
}

/** Keeps the last reading per key (container or pod id) so each call yields a rate since the previous one. */
export interface RateTracker {
  /** Records `cur` and returns the rate since the previous reading of `key`, if any. */
  observe(key: string, cur: CpuPoint): number | undefined;
  has(key: string): boolean;
  /** Drops keys for which `keep` is false. */
  prune(keep: (key: string) => boolean): void;
}

/**
 * `minIntervalNs`: a reading closer than this to the previous one yields the
 * previous rate and keeps the older point, so two RPCs a few ms apart (kubelet
 * summary + metrics) do not produce noisy rates from tiny windows.
 */
export function createRateTracker(minIntervalNs = 50_000_000n): RateTracker {
  const last = new Map<string, { point: CpuPoint; rate?: number }>();
  return {
    observe(key, cur) {
      const prev = last.get(key);
      if (!prev) {
        last.set(key, { point: cur });
        return undefined;
      }
      if (cur.at - prev.point.at < minIntervalNs && cur.cpuNanos >= prev.point.cpuNanos) return prev.rate;
      const rate = nanoCores(prev.point, cur);
      last.set(key, { point: cur, rate });
      return rate;
    },
    has: (key) => last.has(key),
    prune(keep) {
      for (const k of [...last.keys()]) if (!keep(k)) last.delete(k);
    },
  };
}

/** Records a counter read just now under `key` and returns the rate since the previous one; nothing for no reading. */
export function rateNow(rates: RateTracker, key: string, cpuNanos: bigint | undefined): number | undefined {
  return cpuNanos === undefined ? undefined : rates.observe(key, { at: process.hrtime.bigint(), cpuNanos });
}
