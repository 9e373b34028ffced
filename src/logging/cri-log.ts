import * as fs from 'fs';
import * as path from 'path';
import { openLogForAppend } from './safe-path';

/**
 * The CRI container log format the kubelet reads:
 *   <RFC3339Nano timestamp> <stdout|stderr> <P|F> <content>\n
 * P marks a partial line (continued by the next entry), F a full one.
 */
export type LogStream = 'stdout' | 'stderr';

const NEWLINE = Buffer.from('\n');
const ENTRY = /^(\S+) (stdout|stderr) [PF] /;
const TAIL_START = 64 * 1024;
const TAIL_MAX = 16 * 1024 * 1024;

export function criLines(timestamp: string, stream: LogStream, content: string): string {
  return criEntries(timestamp, stream, Buffer.from(content, 'utf8')).toString('utf8');
}

/**
 * Bytes, not text: Docker cuts long lines at a byte count, so a partial entry may end
 * inside a multi-byte character that only the next entry completes.
 */
export function criEntries(timestamp: string, stream: LogStream, content: Buffer): Buffer {
  const out: Buffer[] = [];
  const prefix = (tag: 'P' | 'F'): Buffer => Buffer.from(`${timestamp} ${stream} ${tag} `, 'utf8');
  let start = 0;
  for (let nl = content.indexOf(0x0a); nl >= 0; nl = content.indexOf(0x0a, start)) {
    out.push(prefix('F'), content.subarray(start, nl + 1));
    start = nl + 1;
  }
  if (start < content.length) out.push(prefix('P'), content.subarray(start), NEWLINE);
  return Buffer.concat(out);
}

/** The last entry's timestamp and how many entries carry it (the pieces of one long line share it). */
export interface LastEntries {
  timestamp: string;
  count: number;
}

/** Timestamp of the last complete entry of a CRI log file, or undefined. Reads only the tail. */
export function lastTimestamp(file: string): string | undefined {
  return lastEntries(file)?.timestamp;
}

/**
 * Reads the tail of a CRI log file, widening the window while every entry in it shares
 * the last timestamp (a line of many 16 KiB pieces), up to 16 MiB.
 */
export function lastEntries(file: string): LastEntries | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fs.fstatSync(fd).size;
    for (let want = TAIL_START; ; want *= 2) {
      const len = Math.min(size, want);
      const buf = Buffer.alloc(len);
      fs.readSync(fd, buf, 0, len, size - len);
      const lines = buf.toString('utf8').split('\n');
      if (len < size) lines.shift(); // cut in the middle of an entry
      const found = countLast(lines);
      if (!found || found.complete || len >= size || want >= TAIL_MAX) return found?.entries;
    }
  } finally {
    fs.closeSync(fd);
  }
}

function countLast(lines: string[]): { entries: LastEntries; complete: boolean } | undefined {
  let timestamp: string | undefined;
  let count = 0;
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = ENTRY.exec(lines[i]);
    if (!m) continue;
    if (timestamp === undefined) timestamp = m[1];
    else if (m[1] !== timestamp) return { entries: { timestamp, count }, complete: true };
    count += 1;
  }
  return timestamp === undefined ? undefined : { entries: { timestamp, count }, complete: false };
}

/** Where a CRI file stood when a copy position was saved (see src/logs/log-positions.ts). */
export interface CriFileMark {
  ino: number;
  size: number;
}

/**
 * Cuts a CRI log file back to a saved size: what was appended after the save is about to be
 * copied again. After a kubelet rotation the saved inode lives under another name in the same
 * directory (`0.log.<time>`), so that file is looked for there.
 */
export function truncateToMark(file: string, mark: CriFileMark): { path: string; dropped: number } | undefined {
  const candidates = [file];
  const dir = path.dirname(file);
  try {
    for (const n of fs.readdirSync(dir)) if (path.join(dir, n) !== file) candidates.push(path.join(dir, n));
  } catch {
    return undefined;
  }
  for (const p of candidates) {
    // lstat: a symlink planted in the log directory is never the file we wrote
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (!st?.isFile() || st.ino !== mark.ino) continue;
    if (st.size <= mark.size) return { path: p, dropped: 0 };
    fs.truncateSync(p, mark.size);
    return { path: p, dropped: st.size - mark.size };
  }
  return undefined;
}

/**
 * Appends CRI entries to a file; `reopen` follows a rename by the kubelet's log rotation.
 * Once closed it ignores writes, reopens and further closes: a file descriptor number is
 * reused by the next open, so touching a stale one would write into, or close, someone
 * else's file or socket (a Docker connection, seen as hung requests and EBADF).
 */
export class CriLogFile {
  private fd: number | undefined;
  /** The file the descriptor is open on, and its size counting our own appends. */
  private ino = 0;
  private bytes = 0;
  /** Bumped by each reopen: an append that started before it counts for the old file. */
  private gen = 0;
  /** Appends in flight hold their descriptor open past a reopen or close. */
  private inflight = 0;
  private retired: number[] = [];

  constructor(readonly file: string) {
    this.fd = openLogForAppend(file);
    this.stat();
  }

  /** Inode and size of the file now appended to (a copy position records them). */
  mark(): CriFileMark {
    return { ino: this.ino, size: this.bytes };
  }

  /** Changes with each reopen. */
  generation(): number {
    return this.gen;
  }

  /** Synchronous on purpose: an entry is either before or after a reopen, never lost between. */
  write(timestamp: string, stream: LogStream, content: string | Buffer): void {
    const fd = this.fd;
    if (fd === undefined) return;
    const data = criEntries(timestamp, stream, typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
    for (let off = 0; off < data.length;) off += fs.writeSync(fd, data, off);
    this.bytes += data.length;
  }

  /**
   * Appends ready-made entries without blocking the event loop; the caller awaits it before
   * reading more (back-pressure). A reopen meanwhile lets this append finish in the old file.
   */
  async append(data: Buffer): Promise<void> {
    const fd = this.fd;
    if (fd === undefined || data.length === 0) return;
    const gen = this.gen;
    this.inflight += 1;
    try {
      for (let off = 0; off < data.length;) off += await writeAt(fd, data, off);
      if (gen === this.gen) this.bytes += data.length;
    } finally {
      this.inflight -= 1;
      if (this.inflight === 0) this.closeRetired();
    }
  }

  reopen(): void {
    if (this.fd === undefined) return;
    const next = openLogForAppend(this.file);
    this.retire(this.fd);
    this.fd = next;
    this.gen += 1;
    this.stat();
  }

  close(): void {
    const fd = this.fd;
    if (fd === undefined) return;
    this.fd = undefined;
    this.retire(fd);
  }

  private stat(): void {
    if (this.fd === undefined) return;
    const st = fs.fstatSync(this.fd);
    this.ino = st.ino;
    this.bytes = st.size;
  }

  private retire(fd: number): void {
    this.retired.push(fd);
    if (this.inflight === 0) this.closeRetired();
  }

  private closeRetired(): void {
    for (const fd of this.retired.splice(0)) fs.closeSync(fd);
  }
}

function writeAt(fd: number, data: Buffer, off: number): Promise<number> {
  return new Promise((resolve, reject) => {
    fs.write(fd, data, off, data.length - off, null, (err, written) => (err ? reject(err) : resolve(written)));
  });
}
