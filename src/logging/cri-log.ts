import * as fs from 'fs';
import * as path from 'path';

/**
 * The CRI container log format the kubelet reads:
 *   <RFC3339Nano timestamp> <stdout|stderr> <P|F> <content>\n
 * P marks a partial line (continued by the next entry), F a full one.
 */
export type LogStream = 'stdout' | 'stderr';

export function criLines(timestamp: string, stream: LogStream, content: string): string {
  const parts = content.split('\n');
  const last = parts.pop() ?? '';
  let out = '';
  for (const line of parts) out += `${timestamp} ${stream} F ${line}\n`;
  if (last) out += `${timestamp} ${stream} P ${last}\n`;
  return out;
}

/** Timestamp of the last complete entry of a CRI log file, or undefined. Reads only the tail. */
export function lastTimestamp(file: string): string | undefined {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const size = fs.fstatSync(fd).size;
    const len = Math.min(size, 64 * 1024);
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString('utf8').split('\n').filter((l) => l.length > 0);
    for (let i = lines.length - 1; i >= 0; i--) {
      const m = /^(\S+) (stdout|stderr) [PF] /.exec(lines[i]);
      if (m) return m[1];
    }
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/** Appends CRI entries to a file; `reopen` follows a rename by the kubelet's log rotation. */
export class CriLogFile {
  private fd: number;

  constructor(readonly file: string) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.fd = fs.openSync(file, 'a', 0o640);
  }

  /** Synchronous on purpose: an entry is either before or after a reopen, never lost between. */
  write(timestamp: string, stream: LogStream, content: string): void {
    const text = criLines(timestamp, stream, content);
    if (text) fs.writeSync(this.fd, text);
  }

  reopen(): void {
    const next = fs.openSync(this.file, 'a', 0o640);
    fs.closeSync(this.fd);
    this.fd = next;
  }

  close(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      /* already closed */
    }
  }
}
