import { promises as fsp } from 'fs';

/**
 * The lowest oom_score_adj this host lets us set, at most `want`.
 * Rootless Docker and some kernels refuse negative values; runc then fails every
 * container with an opaque "can't get final child's PID from pipe", so we probe
 * once by writing our own /proc/self/oom_score_adj and restoring it.
 */
export async function lowestOomScoreAdj(want: number, file = '/proc/self/oom_score_adj'): Promise<number> {
  const original = Number((await fsp.readFile(file, 'utf8')).trim());
  const tryWrite = async (v: number): Promise<boolean> => {
    try {
      await fsp.writeFile(file, String(v));
      return true;
    } catch {
      return false;
    }
  };
  try {
    if (await tryWrite(want)) return want;
    // allowed values form a range [min, 1000]: binary-search its lower end
    let lo = want; // known refused
    let hi = original; // known allowed (it is the current value)
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await tryWrite(mid)) hi = mid;
      else lo = mid;
    }
    return hi;
  } finally {
    await tryWrite(original);
  }
}
