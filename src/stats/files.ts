import { readFileSync } from 'fs';

/**
 * Small readers for kernel pseudo-files: a missing file (controller not mounted, cgroup gone) is `undefined`, never an error.
 *
 * They read synchronously on purpose: cgroupfs and procfs answer from kernel memory in a few
 * microseconds, while the promise API's open/stat/read/close hops through the thread pool cost
 * about ten times that in CPU (measured: ~170 us vs ~15 us a file), which at 110 pods was most
 * of a stats call.
 */
export function readTextSync(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

export async function readText(file: string): Promise<string | undefined> {
  return readTextSync(file);
}

/** A file holding one unsigned integer; `max` and garbage read as undefined. */
export async function readNumber(file: string): Promise<number | undefined> {
  const t = (await readText(file))?.trim();
  return t && /^\d+$/.test(t) ? Number(t) : undefined;
}

/** Same, as a bigint: cumulative CPU nanoseconds outgrow 2^53 on big, long-lived hosts. */
export async function readBigInt(file: string): Promise<bigint | undefined> {
  const t = (await readText(file))?.trim();
  return t && /^\d+$/.test(t) ? BigInt(t) : undefined;
}

/** `key value` lines (memory.stat, cpu.stat) into numbers; non-numeric values are skipped. */
export function parseFlatKeyed(text: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of (text ?? '').split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) out.set(k, Number(v));
  }
  return out;
}

/** Non-empty lines of a file (cgroup.procs: one pid per line). */
export async function countLines(file: string): Promise<number | undefined> {
  const t = await readText(file);
  return t === undefined ? undefined : t.split('\n').filter((l) => l.trim() !== '').length;
}
