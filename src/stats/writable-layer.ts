import { promises as fsp } from 'fs';
import * as path from 'path';

export interface LayerUsage {
  /** Disk usage (allocated blocks, as `du`), not apparent size. */
  bytes: number;
  inodes: number;
  /** The walk hit its entry or time bound: the numbers are a lower bound. */
  truncated: boolean;
}

export interface WalkBounds {
  maxEntries: number;
  maxMs: number;
}

/**
 * Writable layer usage = a bounded `du` of overlay2's upper dir (from inspect's
 * GraphDriver.Data.UpperDir). Chosen over `docker ps --size` / `SizeRw`, which
 * makes dockerd walk every container's layer on every list, and over project
 * quotas, which need an XFS backing fs. The walk touches only what the container
 * wrote, is bounded in entries and time, and its result is cached (below).
 */
export async function walkUsage(dir: string, bounds: WalkBounds): Promise<LayerUsage> {
  const deadline = Date.now() + bounds.maxMs;
  let bytes = 0;
  let inodes = 0;
  const stack = [dir];
  while (stack.length > 0) {
    if (inodes >= bounds.maxEntries || Date.now() > deadline) return { bytes, inodes, truncated: true };
    const d = stack.pop() as string;
    let names: string[];
    try {
      names = await fsp.readdir(d);
    } catch {
      continue; // removed while walking, or not ours to read
    }
    const stats = await Promise.all(names.map((n) => fsp.lstat(path.join(d, n)).catch(() => undefined)));
    stats.forEach((st, i) => {
      if (!st) return;
      inodes++;
      bytes += st.blocks * 512;
      if (st.isDirectory()) stack.push(path.join(d, names[i]));
    });
  }
  return { bytes, inodes, truncated: false };
}

export interface LayerUsageCache {
  /** Usage of `dir`: the first call waits for a walk; later ones get the last result, refreshed in the background once older than `ttlMs`. */
  get(key: string, dir: string): Promise<LayerUsage>;
  /**
   * The last result without waiting: undefined until a first walk finished (it is started
   * here). Keeps the walk, a real directory tree on disk, out of the stats RPCs.
   */
  latest(key: string, dir: string): LayerUsage | undefined;
  forget(keep: (key: string) => boolean): void;
}

export function createLayerUsageCache(
  opts: { ttlMs?: number; bounds?: WalkBounds; walk?: typeof walkUsage } = {},
): LayerUsageCache {
  const ttlMs = opts.ttlMs ?? 15_000;
  const bounds = opts.bounds ?? { maxEntries: 200_000, maxMs: 2_000 };
  const walk = opts.walk ?? walkUsage;
  const cache = new Map<string, { at: number; dir: string; value: Promise<LayerUsage>; result?: LayerUsage }>();
  const refresh = (key: string, dir: string): Promise<LayerUsage> => {
    const value = walk(dir, bounds);
    value.then(
      (result) => cache.set(key, { at: Date.now(), dir, value, result }),
      () => undefined, // a failed walk is not remembered
    );
    return value;
  };
  /** Walks in progress, so concurrent callers and background refreshes share one. */
  const walking = new Map<string, Promise<LayerUsage>>();
  const walkOnce = (key: string, dir: string): Promise<LayerUsage> => {
    let p = walking.get(key);
    if (!p) {
      p = refresh(key, dir).finally(() => walking.delete(key));
      walking.set(key, p);
    }
    return p;
  };
  return {
    get(key, dir) {
      const hit = cache.get(key);
      if (hit && hit.dir === dir) {
        // stale: answer with the last value and refresh behind it, so a big layer never slows the RPC
        if (Date.now() - hit.at >= ttlMs) walkOnce(key, dir).catch(() => undefined);
        return hit.value;
      }
      return walkOnce(key, dir);
    },
    latest(key, dir) {
      const hit = cache.get(key);
      if (hit && hit.dir === dir) {
        if (Date.now() - hit.at >= ttlMs) walkOnce(key, dir).catch(() => undefined);
        return hit.result;
      }
      walkOnce(key, dir).catch(() => undefined);
      return undefined;
    },
    forget(keep) {
      for (const k of [...cache.keys()]) if (!keep(k)) cache.delete(k);
    },
  };
}
