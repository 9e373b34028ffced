import { promises as fsp } from 'fs';

/** How the probe reads and writes an oom_score_adj file (a seam for tests: a regular file accepts anything). */
export interface OomScoreFile {
  read(): Promise<string>;
  /** Rejects when the kernel refuses the value. */
  write(value: string): Promise<void>;
}

const procFile = (file: string): OomScoreFile => ({
  read: () => fsp.readFile(file, 'utf8'),
  write: (v) => fsp.writeFile(file, v),
});

/**
 * The lowest oom_score_adj this host lets us set, at most `want`.
 * Rootless Docker and some kernels refuse negative values; runc then fails every
 * container with an opaque "can't get final child's PID from pipe", so we probe
 * once by writing our own /proc/self/oom_score_adj and restoring it.
 */
export async function lowestOomScoreAdj(
  want: number,
  file: string | OomScoreFile = '/proc/self/oom_score_adj',
): Promise<number> {
  const io = typeof file === 'string' ? procFile(file) : file;
  const original = Number((await io.read()).trim());
  const tryWrite = async (v: number): Promise<boolean> => {
    try {
      await io.write(String(v));
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
