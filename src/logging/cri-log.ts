import * as fs from 'fs';
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

/**
 * Appends CRI entries to a file; `reopen` follows a rename by the kubelet's log rotation.
 * Once closed it ignores writes, reopens and further closes: a file descriptor number is
 * reused by the next open, so touching a stale one would write into, or close, someone
 * else's file or socket (a Docker connection, seen as hung requests and EBADF).
 */
export class CriLogFile {
  private fd: number | undefined;

  constructor(readonly file: string) {
    this.fd = openLogForAppend(file);
  }

  /** Synchronous on purpose: an entry is either before or after a reopen, never lost between. */
  write(timestamp: string, stream: LogStream, content: string | Buffer): void {
    const fd = this.fd;
    if (fd === undefined) return;
    const data = criEntries(timestamp, stream, typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
    for (let off = 0; off < data.length; ) off += fs.writeSync(fd, data, off);
  }

  reopen(): void {
    if (this.fd === undefined) return;
    const next = openLogForAppend(this.file);
    fs.closeSync(this.fd);
    this.fd = next;
  }

  close(): void {
    const fd = this.fd;
    if (fd === undefined) return;
    this.fd = undefined;
    fs.closeSync(fd);
  }
}
