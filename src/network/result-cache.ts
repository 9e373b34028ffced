import { promises as fsp } from 'fs';
import * as path from 'path';
import { writeFileAtomic } from '../checkpoint/store';
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
  config: NetworkConfList;
  /** Absent while ADD has not finished. */
  result?: unknown;
}

export interface ResultCache {
  write(entry: CacheEntry): Promise<void>;
  read(sandboxId: string): Promise<CacheEntry | undefined>;
  remove(sandboxId: string): Promise<void>;
  list(): Promise<string[]>;
}

export async function createResultCache(dir: string): Promise<ResultCache> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const fileOf = (id: string): string => {
    if (!/^[0-9a-f]{1,64}$/.test(id)) throw new Error(`invalid sandbox id ${JSON.stringify(id)} for the CNI cache`);
    return path.join(dir, `${id}.json`);
  };
  return {
    write: async (entry) => writeFileAtomic(fileOf(entry.sandboxId), JSON.stringify(entry, null, 2) + '\n'),
    async read(id) {
      try {
        const e = JSON.parse(await fsp.readFile(fileOf(id), 'utf8')) as CacheEntry;
        return e.sandboxId === id && e.config?.plugins ? e : undefined;
      } catch {
        return undefined;
      }
    },
    remove: (id) => fsp.rm(fileOf(id), { force: true }),
    async list() {
      const names = await fsp.readdir(dir).catch(() => [] as string[]);
      return names.filter((n) => /^[0-9a-f]{64}\.json$/.test(n)).map((n) => n.slice(0, -5));
    },
  };
}
