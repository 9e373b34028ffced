import { promises as fsp } from 'fs';
import * as path from 'path';
import { writeFileAtomic } from '../checkpoint/store';
import { createFileMemo, type FileMemoOptions } from '../checkpoint/file-memo';
import type { NetworkConfList } from './cni-config';
import type { PortMappingSpec } from './types';

/**
 * What DEL needs, kept per sandbox: written before ADD runs (so a crash mid-ADD
 * can still be undone) and completed with the result after it.
 */
export interface CacheEntry {
  sandboxId: string;
  podName: string;
  podNamespace: string;
  podUid: string;
  netns: string;
  ifName: string;
  portMappings: PortMappingSpec[];
  /** The config ADD ran with; DEL uses it even if the conf dir changed since. */
  config: NetworkConfList;
  /** Absent while ADD has not finished. */
  result?: unknown;
}

/** A cache file that exists but cannot be used (disk trouble, hand edits). */
export class CorruptCacheEntryError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`corrupt CNI cache entry ${file}: ${reason}`);
    this.name = 'CorruptCacheEntryError';
  }
}

export interface ResultCache {
  write(entry: CacheEntry): Promise<void>;
  /** The entry, undefined when there is none; rejects with CorruptCacheEntryError when unreadable. */
  read(sandboxId: string): Promise<CacheEntry | undefined>;
  remove(sandboxId: string): Promise<void>;
  list(): Promise<string[]>;
}

const ID = /^[0-9a-f]{1,64}$/;

function validEntry(e: unknown, id: string): e is CacheEntry {
  if (typeof e !== 'object' || e === null) return false;
  const c = e as Partial<CacheEntry>;
  return (
    c.sandboxId === id &&
    typeof c.netns === 'string' &&
    Array.isArray(c.portMappings) &&
    Array.isArray(c.config?.plugins)
  );
}

/** One JSON file per sandbox id in `dir`, written atomically (temp file, fsync, rename, dir fsync). */
export async function createResultCache(dir: string, memoOptions: FileMemoOptions = {}): Promise<ResultCache> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  // PodSandboxStatus reads each pod's entry once a minute; it changes only at ADD and DEL
  const memo = createFileMemo<CacheEntry | undefined>(memoOptions);
  const load = async (id: string, file: string): Promise<CacheEntry | undefined> => {
    let text: string;
    try {
      text = await fsp.readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new CorruptCacheEntryError(file, (err as Error).message);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new CorruptCacheEntryError(file, (err as Error).message);
    }
    if (!validEntry(parsed, id)) throw new CorruptCacheEntryError(file, 'missing fields or another sandbox id');
    return parsed;
  };
  const fileOf = (id: string): string => {
    if (!ID.test(id)) throw new Error(`invalid sandbox id ${JSON.stringify(id)} for the CNI cache`);
    return path.join(dir, `${id}.json`);
  };
  return {
    async write(entry) {
      const file = fileOf(entry.sandboxId);
      memo.delete(file);
      await writeFileAtomic(file, JSON.stringify(entry, null, 2) + '\n');
    },
    async read(id) {
      if (!ID.test(id)) return undefined;
      const file = fileOf(id);
      return memo.through(file, () => load(id, file));
    },
    async remove(id) {
      const file = fileOf(id);
      memo.delete(file);
      await fsp.rm(file, { force: true });
    },
    async list() {
      const names = await fsp.readdir(dir).catch(() => [] as string[]);
      // temp files of interrupted writes end in .tmp-*, never .json
      return names.filter((n) => /^[0-9a-f]{64}\.json$/.test(n)).map((n) => n.slice(0, -5));
    },
  };
}

/**
 * The cache opened on first use, and again after a failed open (e.g. a
 * read-only mount fixed later) instead of failing every call from then on.
 */
export function lazyResultCache(open: () => Promise<ResultCache>): () => Promise<ResultCache> {
  let opened: Promise<ResultCache> | undefined;
  return () => {
    opened ??= open().catch((err: unknown) => {
      opened = undefined;
      throw err;
    });
    return opened;
  };
}
