import { createHash } from 'crypto';
import { promises as fsp } from 'fs';
import type { FileHandle } from 'fs/promises';
import * as path from 'path';
import type { JsonFilePosition } from './json-file-follower';

/** One file of a json-file log's rotation set as listed on disk. */
export interface RotatedFile {
  name: string;
  /** 0 for the live file, n for `.n` (larger is older). */
  index: number;
  ino: number;
  size: number;
}

const HEAD_PROBE_BYTES = 256 * 1024;

/** `<base>` (e.g. `<id>-json.log`) and its rotated `.n` siblings in `dir`, oldest first. Compressed (`.gz`) ones are not ours to read. */
export async function listRotated(dir: string, base: string): Promise<RotatedFile[]> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  const out: RotatedFile[] = [];
  for (const name of names) {
    let index: number;
    if (name === base) index = 0;
    else if (name.startsWith(base + '.') && /^\d+$/.test(name.slice(base.length + 1)))
      index = Number(name.slice(base.length + 1));
    else continue;
    const st = await fsp.stat(path.join(dir, name)).catch(() => undefined);
    if (st) out.push({ name, index, ino: st.ino, size: st.size });
  }
  return out.sort((a, b) => b.index - a.index);
}

/** Index in `listed` of the saved file (same inode and same first line), or -1. */
export async function findSaved(dir: string, listed: RotatedFile[], from: JsonFilePosition): Promise<number> {
  for (let i = 0; i < listed.length; i++) {
    if (listed[i].ino !== from.ino || listed[i].size < from.offset) continue;
    const fh = await fsp.open(path.join(dir, listed[i].name), 'r').catch(() => undefined);
    if (!fh) continue;
    try {
      if ((await headOf(fh)) === from.head) return i;
    } finally {
      await fh.close();
    }
  }
  return -1;
}

/** sha1 of the file's first line (each carries Docker's nanosecond time), undefined until one is complete. */
export async function headOf(fh: FileHandle): Promise<string | undefined> {
  const buf = Buffer.allocUnsafe(HEAD_PROBE_BYTES);
  const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
  const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
  if (nl < 0) return bytesRead === buf.length ? createHash('sha1').update(buf).digest('hex') : undefined;
  return createHash('sha1')
    .update(buf.subarray(0, nl + 1))
    .digest('hex');
}
