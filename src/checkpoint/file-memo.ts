import { statSync } from 'fs';

/**
 * What was made from a small state file (a checkpoint, a CNI cache entry), kept while the file
 * is unchanged. PodSandboxStatus reads both for every pod once a minute; a stat is one syscall,
 * where reading, parsing and checking the file again is a thread-pool hop and a hash.
 *
 * "Unchanged" is the file's inode, size, mtime and ctime. Like git's racy-index rule, a file
 * changed less than `racyMs` ago is not kept: a second write in the same timestamp tick could
 * leave all four equal. Our own writes replace the file (a new inode) and drop the entry anyway;
 * the stamp is for hands and tools that edit it in place.
 *
 * Kept values are frozen, so a caller that changed one would fail loudly instead of changing
 * what the next caller reads.
 */
export interface FileMemo<T> {
  /** The value for `file`: the kept one while the file is unchanged, else `load()`'s (kept when settled). */
  through(file: string, load: () => Promise<T>): Promise<T>;
  delete(file: string): void;
}

/** Git's racy-index rule: how long a file or directory must be unchanged before a copy of it is trusted. */
export const RACY_MS = 1000;

/** Whether a change at `ns` (ns since the epoch) is older than `racyMs`: a later change must show a later stamp. */
export const settledSince = (ns: bigint, racyMs = RACY_MS): boolean => ns < BigInt(Date.now() - racyMs) * 1_000_000n;

function stampOf(file: string, racyMs: number): { stamp: string; settled: boolean } | undefined {
  try {
    const st = statSync(file, { bigint: true });
    return {
      stamp: `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`,
      // ctime cannot be set back by hand (touch -d moves mtime only)
      settled: settledSince(st.ctimeNs, racyMs),
    };
  } catch {
    return undefined;
  }
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

export interface FileMemoOptions {
  /** How long a file must be unchanged before what was made from it is kept (tests shorten it). */
  racyMs?: number;
  maxEntries?: number;
}

export function createFileMemo<T>({ racyMs = RACY_MS, maxEntries = 4096 }: FileMemoOptions = {}): FileMemo<T> {
  const kept = new Map<string, { stamp: string; value: T }>();
  return {
    async through(file, load) {
      const before = stampOf(file, racyMs);
      const hit = kept.get(file);
      if (hit && before && hit.stamp === before.stamp) return hit.value;
      kept.delete(file);
      const value = await load();
      // kept only if the file was settled before the load and is the same file after it
      const after = stampOf(file, racyMs);
      if (before?.settled && after?.stamp === before.stamp && value !== undefined) {
        if (kept.size >= maxEntries) kept.delete(kept.keys().next().value as string);
        kept.set(file, { stamp: before.stamp, value: deepFreeze(value) });
      }
      return value;
    },
    delete: (file) => void kept.delete(file),
  };
}
