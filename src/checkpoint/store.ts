import { createHash } from 'crypto';
import { promises as fsp, statSync } from 'fs';
import * as path from 'path';
import type { Logger } from '../logging/logger';
import { assetPath, readAsset } from '../assets';
import { compileSchemaCheck } from './schema-check';
import { createFileMemo, settledSince, type FileMemoOptions } from './file-memo';

export interface CheckpointPortMapping {
  protocol: string;
  container_port: number;
  host_port: number;
  host_ip?: string;
}

export interface SandboxCheckpointData {
  port_mappings: CheckpointPortMapping[];
  host_network: boolean;
}

export interface CrishimCheckpointFields {
  sandbox_id: string;
  uid: string;
  attempt: number;
  /** Nanoseconds since the epoch, as a decimal string (too large for a JS number). */
  created_at: string;
  runtime_handler?: string;
  /** `creating` until RunPodSandbox completed; see the schema. */
  phase?: 'creating' | 'ready';
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface SandboxCheckpoint {
  version: 'v1';
  name: string;
  namespace: string;
  data: SandboxCheckpointData;
  crishim?: CrishimCheckpointFields;
  checksum: string | number;
}

export type CheckpointBody = Omit<SandboxCheckpoint, 'checksum' | 'version'>;

export interface CheckpointStore {
  readonly dir: string;
  write(sandboxId: string, body: CheckpointBody): Promise<void>;
  /** undefined when absent; a corrupt or unreadable entry is moved aside (logged) and reads as absent. */
  read(sandboxId: string): Promise<SandboxCheckpoint | undefined>;
  /** Idempotent. */
  remove(sandboxId: string): Promise<void>;
  /** Ids of every checkpoint on disk: the same array while the directory is unchanged, so never mutate it. */
  list(): Promise<readonly string[]>;
}

const SUFFIX = '.json';
/** Read errors caused by the process's state, not the file's. */
const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EINTR', 'ENOMEM']);
/** cri-dockerd names its checkpoint files by the bare sandbox id. */
const LEGACY = /^[0-9a-f]{64}$/;
export const SCHEMA_PATH = assetPath('checkpoints/sandbox-checkpoint.v1.schema.json');
const schemaErrors = compileSchemaCheck(
  JSON.parse(readAsset('checkpoints/sandbox-checkpoint.v1.schema.json')) as Record<string, unknown>,
);

export function checksumOf(cp: Omit<SandboxCheckpoint, 'checksum'>): string {
  const canonical = JSON.stringify({
    version: cp.version,
    name: cp.name,
    namespace: cp.namespace,
    data: cp.data,
    crishim: cp.crishim,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** Writes via temp file + fsync + rename so a crash leaves the old file or the new one, never half of one. */
export async function writeFileAtomic(file: string, content: string, mode = 0o600): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  const fh = await fsp.open(tmp, 'w', mode);
  try {
    await fh.writeFile(content);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  // make the rename itself durable
  const dir = await fsp.open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** A directory's mtime in ns, or undefined when it cannot be read (missing, no permission). */
function dirMtime(dir: string): bigint | undefined {
  try {
    return statSync(dir, { bigint: true, throwIfNoEntry: false })?.mtimeNs;
  } catch {
    return undefined;
  }
}

export async function createCheckpointStore(
  dir: string,
  logger: Logger,
  memoOptions: FileMemoOptions = {},
): Promise<CheckpointStore> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const fileOf = (id: string): string => {
    if (!/^[0-9a-f]{1,64}$/.test(id)) throw new Error(`invalid sandbox id ${JSON.stringify(id)} for a checkpoint`);
    return path.join(dir, id + SUFFIX);
  };

  /** Moves a bad entry (file or directory) to corrupt/; never throws, so a bad checkpoint cannot stop start-up. */
  const setAside = async (file: string, why: string): Promise<void> => {
    const aside = path.join(dir, 'corrupt');
    const target = path.join(aside, `${path.basename(file)}.${Date.now()}`);
    try {
      await fsp.mkdir(aside, { recursive: true, mode: 0o700 });
      await fsp.rename(file, target);
      logger.error('checkpoint is unreadable; moved aside', { file, movedTo: target, reason: why });
    } catch (err) {
      logger.error('checkpoint is unreadable and could not be moved aside; ignoring it', {
        file,
        reason: why,
        error: (err as Error).message,
      });
    }
  };

  /** Text of the first candidate that exists; one that cannot be read (a directory, EACCES) is set aside and skipped. */
  const readText = async (candidates: string[]): Promise<{ file: string; text: string } | undefined> => {
    for (const file of candidates) {
      try {
        return { file, text: await fsp.readFile(file, 'utf8') };
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') continue;
        const reason = `cannot read: ${code ?? (err as Error).message}`;
        // out of fds or memory says nothing about the file: keep it for the next read
        if (code && TRANSIENT.has(code))
          logger.warn('checkpoint could not be read now; treating it as absent', { file, reason });
        else await setAside(file, reason);
      }
    }
    return undefined;
  };

  /** Checked checkpoints by file: PodSandboxStatus reads one per pod and call (see file-memo.ts). */
  const memo = createFileMemo<SandboxCheckpoint | undefined>(memoOptions);

  const readChecked = async (sandboxId: string): Promise<SandboxCheckpoint | undefined> => {
    const found = await readText([fileOf(sandboxId), path.join(dir, sandboxId)]);
    if (!found) return undefined;
    const { file, text } = found;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      await setAside(file, `not JSON: ${(err as Error).message}`);
      return undefined;
    }
    const violations = schemaErrors(parsed);
    if (violations.length > 0) {
      await setAside(file, `schema: ${violations.join('; ')}`);
      return undefined;
    }
    const cp = parsed as unknown as SandboxCheckpoint;
    // cri-dockerd's integer checksum uses its own hashing; we only verify ours
    if (typeof cp.checksum === 'string' && cp.checksum !== checksumOf(cp)) {
      await setAside(file, 'checksum mismatch');
      return undefined;
    }
    if (cp.crishim && cp.crishim.sandbox_id !== sandboxId) {
      await setAside(file, `belongs to sandbox ${cp.crishim.sandbox_id}`);
      return undefined;
    }
    return cp;
  };

  /** The last listing and the directory's mtime when it was read. */
  let listed: { mtime: bigint; ids: readonly string[] } | undefined;

  return {
    dir,
    async write(sandboxId, body) {
      const cp: Omit<SandboxCheckpoint, 'checksum'> = { version: 'v1', ...body };
      const full: SandboxCheckpoint = { ...cp, checksum: checksumOf(cp) };
      const file = fileOf(sandboxId);
      memo.delete(file);
      await writeFileAtomic(file, JSON.stringify(full, null, 2) + '\n');
    },
    async read(sandboxId) {
      return memo.through(fileOf(sandboxId), () => readChecked(sandboxId));
    },
    async remove(sandboxId) {
      const file = fileOf(sandboxId);
      memo.delete(file);
      await fsp.rm(file, { force: true });
      await fsp.rm(path.join(dir, sandboxId), { force: true });
    },
    async list() {
      // every ListPodSandbox asks: read the directory again only when an entry was added, renamed
      // or removed. A synchronous stat: one local inode, where the promise API's thread-pool hop
      // would wake a worker thread and then the event loop at each relist of the kubelet.
      const mtime = dirMtime(dir);
      if (listed && mtime !== undefined && listed.mtime === mtime) return listed.ids;
      const names = await fsp.readdir(dir).catch(() => [] as string[]);
      const ids = names.filter((n) => /^[0-9a-f]{64}\.json$/.test(n)).map((n) => n.slice(0, -SUFFIX.length));
      const all = [...new Set([...ids, ...names.filter((n) => LEGACY.test(n))])];
      // mtime ticks coarsely: a change in the same tick as the one we saw would keep it, so only
      // a directory left alone for a while may be answered from memory (git's racy-index rule)
      listed = mtime !== undefined && settledSince(mtime) ? { mtime, ids: all } : undefined;
      return all;
    },
  };
}
