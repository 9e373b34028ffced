import { closeSync, openSync, readFileSync, readSync } from 'fs';
import * as path from 'path';

/**
 * Small readers for kernel pseudo-files: a missing file (controller not mounted, cgroup gone) is `undefined`, never an error.
 *
 * They read synchronously on purpose: cgroupfs and procfs answer from kernel memory in a few
 * microseconds, while the promise API's open/stat/read/close hops through the thread pool cost
 * about ten times that in CPU (measured: ~170 us vs ~15 us a file), which at 110 pods was most
 * of a stats call.
 */
export function readTextSync(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * Open cgroup files, re-read with one pread at offset 0 (cgroupfs regenerates the text on
 * each read): a third of the CPU of open+fstat+read+close at every call (measured at 220
 * containers: ~19 us against ~66 us for a container's five files). A container's files are
 * closed when the stats collector sees it stopped or gone (closeHeldIn); any other fd unused
 * for a minute is closed by the next sweep (a timer, every minute while any is open), so a
 * removed cgroup is not pinned for more than two (the kubelet reads live ones every 10 s);
 * a failed read closes it at once.
 */
const openFiles = new Map<string, OpenFile>();
interface OpenFile {
  fd: number;
  used: number;
  /** A value readKept took from the file, when (0: none) and in which keptEpoch. */
  kept?: number;
  keptAt: number;
  keptEpoch: number;
}
/** The same files by directory: a gone cgroup's few are found without scanning every open file (closeHeldIn). */
const openByDir = new Map<string, Set<string>>();
const IDLE_MS = 60_000;
const MAX_OPEN = 4096;
const readBuf = Buffer.allocUnsafe(64 * 1024);
let sweeper: NodeJS.Timeout | undefined;

function closeEntry(file: string, fd: number): void {
  openFiles.delete(file);
  const dir = path.dirname(file);
  const inDir = openByDir.get(dir);
  inDir?.delete(file);
  if (inDir?.size === 0) openByDir.delete(dir);
  try {
    closeSync(fd);
  } catch {
    /* already closed */
  }
}

function sweep(now: number, all = false): void {
  for (const [file, e] of openFiles) if (all || now - e.used >= IDLE_MS) closeEntry(file, e.fd);
  if (openFiles.size === 0 && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

/** Length of what the last readOpenBytes put in the buffer it answered. */
let bytesLen = 0;

/**
 * A cgroup file's bytes: in the shared buffer (valid until the next read) or, for a file longer
 * than that, a buffer of its own; `bytesLen` says how many are the file's.
 */
function readOpenBytes(file: string): Buffer | undefined {
  const now = Date.now();
  let e = openFiles.get(file);
  if (!e) {
    if (openFiles.size >= MAX_OPEN) sweep(now, true);
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      return undefined;
    }
    e = { fd, used: now, keptAt: 0, keptEpoch: 0 };
    openFiles.set(file, e);
    const dir = path.dirname(file);
    const inDir = openByDir.get(dir);
    if (inDir) inDir.add(file);
    else openByDir.set(dir, new Set([file]));
    // unref'd: an idle daemon's last fds still close, and the timer keeps no process alive
    sweeper ??= setInterval(() => sweep(Date.now()), IDLE_MS).unref();
  }
  e.used = now;
  try {
    const n = readSync(e.fd, readBuf, 0, readBuf.length, 0);
    if (n < readBuf.length) {
      bytesLen = n;
      return readBuf;
    }
  } catch {
    // the cgroup was removed (ENODEV) or replaced: forget this fd; a new cgroup of that name is opened next time
    closeEntry(file, e.fd);
    return undefined;
  }
  // longer than the buffer (a big cgroup.procs): read it whole
  try {
    const whole = readFileSync(file);
    bytesLen = whole.length;
    return whole;
  } catch {
    return undefined;
  }
}

/** A kept-open file's text (see openFiles), for callers that need text rather than numbers. */
export function readHeld(file: string): string | undefined {
  return readOpenBytes(file)?.toString('utf8', 0, bytesLen);
}

/**
 * A kept-open file's bytes handed to `parse` with their length (the buffer may hold older bytes
 * past it, and is reused by the next read): no text made of them. Undefined when unreadable.
 */
export function readHeldWith<T>(file: string, parse: (bytes: Buffer, len: number) => T): T | undefined {
  const b = readOpenBytes(file);
  return b && parse(b, bytesLen);
}

/** Closes a kept-open file now, if it is open (its owner is gone: see netdev.ts). */
export function closeHeld(file: string): void {
  const e = openFiles.get(file);
  if (e) closeEntry(file, e.fd);
}

/**
 * Closes the kept-open files in any of `dirs` (a cgroup's directories, once its container
 * stopped or went): an fd would pin the removed cgroup in the kernel until the idle sweep.
 */
export function closeHeldIn(dirs: ReadonlySet<string>): void {
  for (const dir of dirs) {
    // closeEntry deletes from the set being visited, which a Set's iteration allows
    for (const file of openByDir.get(dir) ?? []) {
      const e = openFiles.get(file);
      if (e) closeEntry(file, e.fd);
    }
  }
}

/** Closes every cached cgroup file (tests, shutdown). */
export function closeCgroupFiles(): void {
  sweep(Date.now(), true);
}

/** A file holding one unsigned integer; `max` and garbage read as undefined. Parsed from its bytes: no string per file. */
export function readNumber(file: string): number | undefined {
  const b = readOpenBytes(file);
  return b && uintAt(b, 0, bytesLen);
}

/**
 * How long readKept's answer stands. Memory limits change when crishim updates resources (which
 * calls forgetKept) or when something else writes the cgroup (docker update, the kubelet resizing
 * a pod cgroup): that shows within this time. Two of the ten files a pod costs a
 * ListPodSandboxStats are limits, the cheapest to keep.
 */
export const KEPT_MS = 30_000;
let keptEpoch = 0;

/**
 * readNumber for a file that rarely changes (a memory limit): answered from the last read for
 * KEPT_MS, unless forgetKept was called since. The value lives with the open fd, so a cgroup
 * closed as gone or stopped (closeHeldIn) is read anew.
 */
export function readKept(file: string): number | undefined {
  const now = Date.now();
  const held = openFiles.get(file);
  if (held && held.keptAt > 0 && held.keptEpoch === keptEpoch && now - held.keptAt < KEPT_MS) {
    held.used = now;
    return held.kept;
  }
  const v = readNumber(file);
  // a failed read closed the file: nothing is kept
  const e = openFiles.get(file);
  if (e) {
    e.kept = v;
    e.keptAt = now;
    e.keptEpoch = keptEpoch;
  }
  return v;
}

/** Every readKept value is read anew at its next call: crishim just changed a container's limits. */
export function forgetKept(): void {
  keptEpoch++;
}

/** Same, as a bigint: cumulative CPU nanoseconds outgrow 2^53 on big, long-lived hosts. */
export function readBigInt(file: string): bigint | undefined {
  const b = readOpenBytes(file);
  if (!b) return undefined;
  const v = uintAt(b, 0, bytesLen);
  if (v === undefined) return undefined;
  // exact below 2^53; past it, from the digits as text
  return Number.isSafeInteger(v) ? BigInt(v) : BigInt(b.toString('latin1', 0, bytesLen).trim());
}

/**
 * A key of a flat keyed file (memory.stat, cpu.stat) as the bytes that find its line. The key
 * must end with the separator (`'rss '`), so it never matches a longer key (`rss_huge`), and
 * the newline in front keeps it from matching a suffix (`total_rss`).
 */
export const statKey = (key: string): Buffer => Buffer.from(`\n${key}`, 'latin1');

/** The value on `key`'s line of a keyed file's bytes, else undefined. */
export function keyedValue(text: Buffer, key: Buffer): number | undefined {
  // the first line has no newline in front
  const head = key.length - 1;
  if (text.length >= head && text.compare(key, 1, key.length, 0, head) === 0) return uintAt(text, head, text.length);
  const at = text.indexOf(key);
  return at < 0 ? undefined : uintAt(text, at + key.length, text.length);
}

/**
 * Reads a keyed file once and looks each of `keys` up in its bytes, into `out` (undefined for
 * a missing key or an unreadable file). A container's memory.stat has dozens of lines and a
 * stats call needs four of them, for every container: no text is made of it.
 */
export function readKeyed(file: string, keys: readonly Buffer[], out: Array<number | undefined>): void {
  const text = readOpenBytes(file)?.subarray(0, bytesLen);
  for (let i = 0; i < keys.length; i++) out[i] = text && keyedValue(text, keys[i]);
}

/** The unsigned integer from `start` to the end of its line (trailing blanks allowed), else undefined. */
function uintAt(b: Buffer, start: number, end: number): number | undefined {
  let v = 0;
  let i = start;
  for (; i < end; i++) {
    const c = b[i];
    if (c < 48 || c > 57) break;
    v = v * 10 + (c - 48);
  }
  if (i === start) return undefined;
  for (; i < end; i++) {
    const c = b[i];
    if (c === 10) break;
    if (c !== 32 && c !== 9 && c !== 13) return undefined;
  }
  return v;
}

/** Non-empty lines of a file (cgroup.procs: one pid per line). */
export function countLines(file: string): number | undefined {
  const t = readHeld(file);
  return t === undefined ? undefined : t.split('\n').filter((l) => l.trim() !== '').length;
}
