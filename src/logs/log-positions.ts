import { promises as fsp, readFileSync } from 'fs';
import * as path from 'path';
import type { JsonFilePosition } from './json-file-rotation';

/**
 * Per-container copy positions under `<root>/container-logs/<id>.json`, written atomically
 * (temporary file + rename), so a crishim restart, even after kill -9, resumes at the byte.
 *
 * A position pairs where reading Docker's json-file stands with the CRI file's inode and size
 * at that moment. The CRI file is appended before its position is saved; on resume the CRI file
 * (or, after a kubelet rotation, the renamed file with that inode) is cut back to the saved size,
 * which drops exactly what was appended after the last save and is about to be copied again.
 */
export interface LogPosition {
  version: 1;
  source: JsonFilePosition;
  cri: { ino: number; size: number };
}

export interface LogPositionStore {
  load(containerId: string): LogPosition | undefined;
  /** Saves (coalescing: a save while one is being written replaces the pending one). */
  save(containerId: string, pos: LogPosition): Promise<void>;
  remove(containerId: string): Promise<void>;
  /** Container ids with a saved position. */
  list(): Promise<string[]>;
}

function valid(p: unknown): p is LogPosition {
  const v = p as LogPosition | undefined;
  return (
    v?.version === 1 &&
    Number.isSafeInteger(v.source?.ino) &&
    Number.isSafeInteger(v.source?.offset) &&
    typeof v.source?.head === 'string' &&
    Number.isSafeInteger(v.source?.size) &&
    Number.isSafeInteger(v.cri?.ino) &&
    Number.isSafeInteger(v.cri?.size)
  );
}

export function createLogPositionStore(dir: string): LogPositionStore {
  const fileOf = (id: string): string => path.join(dir, `${id}.json`);
  /** Per container: the loop writing saves one after another, and the newest save not yet written. */
  const queues = new Map<string, { pending?: LogPosition; running?: Promise<void> }>();
  let made: Promise<unknown> | undefined;

  const write = async (id: string, pos: LogPosition): Promise<void> => {
    made ??= fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    await made;
    const tmp = `${fileOf(id)}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(pos), { mode: 0o600 });
    await fsp.rename(tmp, fileOf(id));
  };

  /** Writes until nothing is pending; rejects with the last failure, if the last write failed. */
  const drain = async (id: string, q: { pending?: LogPosition; running?: Promise<void> }): Promise<void> => {
    let failure: Error | undefined;
    try {
      while (q.pending) {
        const pos = q.pending;
        q.pending = undefined;
        failure = await write(id, pos).then(
          () => undefined,
          (err: Error) => err,
        );
      }
    } finally {
      q.running = undefined;
      queues.delete(id);
    }
    if (failure) throw new Error(`cannot save the log position of container ${id}: ${failure.message}`);
  };

  return {
    load(id) {
      try {
        const p: unknown = JSON.parse(readFileSync(fileOf(id), 'utf8'));
        return valid(p) ? p : undefined;
      } catch {
        return undefined;
      }
    },
    save(id, pos) {
      let q = queues.get(id);
      if (!q) queues.set(id, (q = {}));
      q.pending = pos;
      q.running ??= drain(id, q);
      return q.running;
    },
    async remove(id) {
      await queues.get(id)?.running?.catch(() => undefined);
      await fsp.rm(fileOf(id), { force: true });
      await fsp.rm(`${fileOf(id)}.tmp`, { force: true });
    },
    async list() {
      const names = await fsp.readdir(dir).catch(() => [] as string[]);
      return names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -'.json'.length));
    },
  };
}
