import { createHash } from 'crypto';
import { closeSync, openSync, readdirSync } from 'fs';
import { readAt, statQuietly } from './file-calls';
import * as path from 'path';

/** Where reading stands, as persisted: enough to find the same file again after a restart. */
export interface JsonFilePosition {
  /** Inode of the file being read. */
  ino: number;
  /** Bytes of it already consumed (always at the end of a whole line). */
  offset: number;
  /** Hash of the file's first line: tells the file apart from a newer one that got the same inode number. */
  head: string;
  /** Largest size seen of that file: what a restart lost when the file is gone by then. */
  size: number;
}

/** One file of a json-file log's rotation set as listed on disk. */
export interface RotatedFile {
  name: string;
  /** 0 for the live file, n for `.n` (larger is older). */
  index: number;
  ino: number;
  size: number;
}

const HEAD_PROBE_BYTES = 256 * 1024;

/** The directory calls a listing makes (tests replace them to rotate files mid-listing). */
export interface ListingFs {
  readdir(dir: string): string[];
  /** Inode and size of a path, undefined when nothing is there. */
  stat(file: string): { ino: number; size: number } | undefined;
}

/** Synchronous: microseconds of syscalls, where the thread pool's queue once took 350 ms (json-file-follower.ts). */
const realFs: ListingFs = {
  readdir: (dir) => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  },
  stat: (file) => statQuietly(file),
};

/** Tries at listing the set while no rotation runs before `listRotated` gives up until the next look. */
const LISTING_ATTEMPTS = 10;

/**
 * `<base>` (e.g. `<id>-json.log`) and its rotated `.n` siblings in `dir`, oldest first, as one
 * snapshot; undefined when Docker kept rotating through every attempt (look again later).
 * Compressed (`.gz`) ones are not ours to read.
 *
 * A listing is a readdir and a stat per name, and a rotation that runs between them renames
 * files under it: it then shows a file twice, or at the wrong index, and a file placed too new
 * made the follower skip the ones between (a loaded host lost a whole 2 MiB file that way). So
 * each name is stat'ed twice, all first stats before any second: when every name still holds
 * the same inode, no rename touched those names in between and there was an instant at which
 * they all held what was seen. The indices must also run 0..n without a gap, as Docker leaves
 * them between rotations (a gap is a rename caught halfway, or one readdir missed).
 */
export function listRotated(dir: string, base: string, fs: ListingFs = realFs): RotatedFile[] | undefined {
  let stableWithGap: RotatedFile[] | undefined;
  for (let attempt = 0; attempt < LISTING_ATTEMPTS; attempt++) {
    const named = ourNames(fs.readdir(dir), base);
    const first = statAll(dir, named, fs);
    const second = statAll(dir, named, fs);
    const stable =
      first.every((f, i) => f !== undefined && f.ino === second[i]?.ino) &&
      new Set(first.map((f) => f?.ino)).size === first.length;
    if (!stable) continue;
    const out = (first as RotatedFile[]).sort((a, b) => b.index - a.index);
    if (out.every((f, i) => f.index === out.length - 1 - i)) return out;
    stableWithGap = out;
  }
  // a gap that stays (a file removed by hand) must not stop the copy for good
  return stableWithGap;
}

function ourNames(names: string[], base: string): Array<{ name: string; index: number }> {
  const out: Array<{ name: string; index: number }> = [];
  for (const name of names) {
    if (name === base) out.push({ name, index: 0 });
    else if (name.startsWith(base + '.') && /^\d+$/.test(name.slice(base.length + 1)))
      out.push({ name, index: Number(name.slice(base.length + 1)) });
  }
  return out;
}

function statAll(
  dir: string,
  named: Array<{ name: string; index: number }>,
  fs: ListingFs,
): Array<RotatedFile | undefined> {
  const out: Array<RotatedFile | undefined> = [];
  for (const n of named) {
    const st = fs.stat(path.join(dir, n.name));
    out.push(st ? { ...n, ino: st.ino, size: st.size } : undefined);
  }
  return out;
}

/** Index in `listed` of the saved file (same inode and same first line), or -1. */
export async function findSaved(dir: string, listed: RotatedFile[], from: JsonFilePosition): Promise<number> {
  for (let i = 0; i < listed.length; i++) {
    if (listed[i].ino !== from.ino || listed[i].size < from.offset) continue;
    let fd: number;
    try {
      fd = openSync(path.join(dir, listed[i].name), 'r');
    } catch {
      continue;
    }
    try {
      if ((await headOf(fd)) === from.head) return i;
    } finally {
      closeSync(fd);
    }
  }
  return -1;
}

/** sha1 of the file's first line (each carries Docker's nanosecond time), undefined until one is complete. */
export async function headOf(fd: number): Promise<string | undefined> {
  const buf = Buffer.allocUnsafe(HEAD_PROBE_BYTES);
  const bytesRead = await readAt(fd, buf, buf.length, 0);
  const nl = buf.subarray(0, bytesRead).indexOf(0x0a);
  if (nl < 0) return bytesRead === buf.length ? createHash('sha1').update(buf).digest('hex') : undefined;
  return createHash('sha1')
    .update(buf.subarray(0, nl + 1))
    .digest('hex');
}
