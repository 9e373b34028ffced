import { fstatSync, openSync } from 'fs';
import * as path from 'path';
import { closeQuietly, readAt, statQuietly } from './file-calls';
import { findSaved, headOf, listRotated, type JsonFilePosition, type RotatedFile } from './json-file-rotation';

/**
 * Follows one container's Docker json-file log (`<id>-json.log`) across Docker's rotations,
 * the way `tail -F` does, with an exact position: inode + byte offset.
 *
 * Docker rotates by closing the file, renaming `<id>-json.log` -> `.1` -> `.2` ... (the rename
 * onto `.<max-file - 1>` deletes the oldest) and creating a new `<id>-json.log`. An open file
 * descriptor keeps a renamed or deleted file readable, so every file of the chain is opened as
 * soon as it is seen and kept open until it has been read to its end; only then does reading
 * move on to its successor. A file is never read twice: the chain holds each inode once and
 * reading only moves forward along it.
 * Looking for files (stat, readdir, open) is synchronous, microseconds: through libuv's pool it
 * queued ~350 ms on a loaded host while Docker rotated 8 times. Only log bytes are read async.
 */

/** Whole json-file lines read from one file. */
export interface JsonChunk {
  ino: number;
  /** Offset of `data` in that file. */
  offset: number;
  data: Buffer;
}

/** Lines Docker deleted before they could be read. Counts are lower bounds unless `exact`. */
export interface LogLoss {
  files: number;
  bytes: number;
  exact: boolean;
  reason: string;
}

export interface JsonFileFollowerOptions {
  /** Bytes read per chunk (grows for a longer line). */
  chunkBytes?: number;
  /** While reading steadily, how often to look for new files so they are opened before Docker deletes them. */
  scanEveryMs?: number;
  now?: () => number;
  onLoss?: (loss: LogLoss) => void;
  /** A file was left with an unterminated last line (not Docker's doing; reported, then skipped). */
  onSkippedTail?: (bytes: number) => void;
}

interface OpenFile {
  ino: number;
  fd: number;
  offset: number;
  /** Largest file size observed (from reads). */
  seen: number;
  head?: string;
}

const HOLD_EVERY_MS = 10;
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** First read size: under Node's pool threshold, so a read that finds little or nothing allocates next to nothing. */
const MIN_READ_BYTES = 4000;

export class JsonFileFollower {
  /** Oldest first: chain[0] is being read, the others wait their turn, still open. */
  private chain: OpenFile[] = [];
  private lastScan = -Infinity;
  private closed = false;
  /** start() is done: from then on the directory watch may open files too (hold()). */
  private ready = false;
  private readonly dir: string;
  private readonly base: string;
  private readonly chunkBytes: number;
  private readonly scanEveryMs: number;
  private readonly now: () => number;
  /**
   * How much the next read asks for: grows while reads come back full, shrinks when they come
   * back small (a 256 KiB buffer per poll of 110 idle containers was 110 MB/s of garbage).
   */
  private readSize = MIN_READ_BYTES;

  constructor(
    readonly file: string,
    private readonly opts: JsonFileFollowerOptions = {},
  ) {
    this.dir = path.dirname(file);
    this.base = path.basename(file);
    this.chunkBytes = opts.chunkBytes ?? 256 * 1024;
    this.scanEveryMs = opts.scanEveryMs ?? 20;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Opens the chain. With a saved position, reading resumes at its byte and the files older
   * than it are skipped; without one, it starts at the oldest file still on disk.
   */
  async start(from?: JsonFilePosition): Promise<void> {
    // Docker may rotate between the listing and the opens: then the first file opened is not the
    // one listed, and an empty chain would make the next scan take every file, the already-copied
    // older ones too. List again until the chain starts at the file it should.
    for (let attempt = 0; ; attempt++) {
      const listed = listRotated(this.dir, this.base);
      if (!listed) {
        if (attempt >= 20) throw new Error(`json-file ${this.file} keeps rotating; cannot list it`);
        continue;
      }
      let startAt = 0;
      let offset = 0;
      let found = false;
      if (from) {
        const i = await findSaved(this.dir, listed, from);
        if (i >= 0) {
          startAt = i;
          offset = from.offset;
          found = true;
        }
      }
      this.append(listed.slice(startAt));
      const first = listed[startAt];
      if (
        (first === undefined && this.chain.length === 0) ||
        (first !== undefined && this.chain[0]?.ino === first.ino)
      ) {
        if (this.chain[0]) this.chain[0].offset = offset;
        if (from && !found && (listed.length > 0 || from.size > from.offset)) {
          this.opts.onLoss?.({
            files: 1,
            bytes: Math.max(0, from.size - from.offset),
            exact: false,
            reason: "the json-file being copied was deleted by Docker's rotation before the copy resumed",
          });
        }
        break;
      }
      this.closeChain();
      if (attempt >= 20)
        throw new Error(`json-file ${this.file} keeps rotating under the copy; cannot find where to resume`);
    }
    this.lastScan = this.now();
    this.ready = true;
  }

  /**
   * Opens the files Docker created since the last look, whatever the reader waits on: called at
   * each change in the directory, so a reader that falls behind still holds every file before
   * Docker deletes it. Every write is a change: one look per 10 ms, rotations are 50+ ms apart.
   */
  hold(): void {
    if (!this.ready || this.closed || this.now() - this.lastScan < HOLD_EVERY_MS) return;
    try {
      this.scanIfRotated();
    } catch {
      // called from the directory watch: the reader's own next look meets the error and reports it
    }
  }

  private closeChain(): void {
    const files = this.chain;
    this.chain = [];
    for (const f of files) closeQuietly(f.fd);
  }

  /** The next whole lines, or undefined when everything written so far has been read. */
  async next(): Promise<JsonChunk | undefined> {
    for (;;) {
      if (this.closed) return undefined;
      const cur = this.chain[0];
      if (!cur) {
        if (!this.scan()) return undefined;
        continue;
      }
      // look for new files while reading steadily too, so they are held open before Docker deletes them
      if (this.now() - this.lastScan >= this.scanEveryMs) this.scanIfRotated();
      const successorKnown = this.chain.length > 1;
      const chunk = await this.readLines(cur);
      if (chunk) return chunk;
      if (successorKnown) {
        // a successor was seen before this read hit the end: Docker closed this file for good
        this.retire(cur);
        continue;
      }
      // one seen during the read (hold()) makes the end final only for the next read
      if (this.chain.length > 1) continue;
      if (!this.scanIfRotated()) return undefined;
    }
  }

  /** The position after the last chunk returned, undefined before the first file exists. */
  async position(): Promise<JsonFilePosition | undefined> {
    const cur = this.chain[0];
    if (!cur) return undefined;
    cur.head ??= await headOf(cur.fd);
    if (cur.head === undefined) return undefined;
    return { ino: cur.ino, offset: cur.offset, head: cur.head, size: Math.max(cur.seen, cur.offset) };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closeChain();
  }

  private async readLines(cur: OpenFile): Promise<JsonChunk | undefined> {
    for (let want = Math.min(this.readSize, this.chunkBytes); ; want *= 2) {
      const buf = Buffer.allocUnsafe(want);
      const bytesRead = await readAt(cur.fd, buf, want, cur.offset);
      this.readSize =
        bytesRead === want
          ? Math.min(want * 2, this.chunkBytes)
          : Math.max(MIN_READ_BYTES, bytesRead < this.readSize / 4 ? this.readSize / 2 : this.readSize);
      if (bytesRead === 0) return undefined;
      cur.seen = Math.max(cur.seen, cur.offset + bytesRead);
      const last = buf.lastIndexOf(0x0a, bytesRead - 1);
      if (last >= 0) {
        const chunk: JsonChunk = { ino: cur.ino, offset: cur.offset, data: buf.subarray(0, last + 1) };
        cur.offset += last + 1;
        return chunk;
      }
      // a line still being written, or (past the limit) not a json-file at all
      if (bytesRead < want || want >= MAX_LINE_BYTES) return undefined;
    }
  }

  /** Done with a file: bytes after its last newline (never Docker's doing) are reported and skipped. */
  private retire(cur: OpenFile): void {
    const { size } = fstatSync(cur.fd);
    if (size > cur.offset) this.opts.onSkippedTail?.(size - cur.offset);
    this.chain.shift();
    closeQuietly(cur.fd);
  }

  /** Cheap check (one stat): has the live name moved to another inode since the newest file we hold? */
  private scanIfRotated(): boolean {
    this.lastScan = this.now();
    const newest = this.chain[this.chain.length - 1];
    const st = statQuietly(this.file);
    if (!st || (newest && st.ino === newest.ino)) return false;
    return this.scan();
  }

  /** Lists the chain on disk and opens the files newer than the newest one held; true when any was added. */
  private scan(): boolean {
    this.lastScan = this.now();
    for (let attempt = 0; attempt < 5; attempt++) {
      const listed = listRotated(this.dir, this.base);
      if (!listed) return false;
      const held = new Set(this.chain.map((f) => f.ino));
      let newestHeld = -1;
      listed.forEach((l, i) => {
        if (held.has(l.ino)) newestHeld = i;
      });
      if (newestHeld < 0 && this.chain.length > 0 && listed.length > 0) {
        // every file we knew is gone from the directory: Docker rotated max-file times between two looks
        this.opts.onLoss?.({
          files: 0,
          bytes: 0,
          exact: false,
          reason: 'Docker rotated the json-file max-file times between two checks; files between may be lost',
        });
      }
      const fresh = listed.slice(newestHeld + 1);
      if (fresh.length === 0) return false;
      if (this.append(fresh)) return true;
      // a rotation renamed files under us: list again
    }
    return false;
  }

  /**
   * Opens files (oldest first) and adds them to the chain. Stops at the first one whose name
   * now points at another inode (a rotation in between); false when none could be added.
   */
  private append(files: RotatedFile[]): boolean {
    let added = 0;
    for (const l of files) {
      let fd: number;
      try {
        fd = openSync(path.join(this.dir, l.name), 'r');
      } catch {
        break;
      }
      const st = fstatSync(fd);
      if (st.ino !== l.ino) {
        closeQuietly(fd);
        break;
      }
      this.chain.push({ ino: l.ino, fd, offset: 0, seen: st.size });
      added += 1;
    }
    return added > 0;
  }
}
