import { type LogStream } from '../logging/cri-log';

/** Docker's log records as the logs API sends them: multiplexed frames, or raw bytes for a tty. */

/**
 * Docker's log copier (daemon/logger/copier.go, 16 KiB buffer for json-file) cuts a line
 * without newline into records of this many bytes; checked against Docker 20.10.
 */
export const DOCKER_PARTIAL_BYTES = 16 * 1024;

/** One json-file record as the logs API replays it with timestamps=true. */
export type RecordHandler = (stream: LogStream, timestamp: string, message: Buffer) => void;

/** Splits one frame's "<timestamp> <message>" (a whole record: Docker writes one frame per record). */
export function splitRecord(payload: Buffer): { timestamp: string; message: Buffer } | undefined {
  const sp = payload.indexOf(0x20);
  if (sp <= 0) return undefined;
  return { timestamp: payload.subarray(0, sp).toString('latin1'), message: payload.subarray(sp + 1) };
}

/**
 * Parser of the logs stream of a tty container, which has no framing: each record is
 * "<timestamp> <message>" and a partial record (a line cut at 16 KiB, or the rest flushed
 * when the container exits) has no newline. So a message ends after its newline or after
 * DOCKER_PARTIAL_BYTES bytes, whichever comes first.
 */
export class TtyRecordParser {
  private tsParts: Buffer[] = [];
  private timestamp: string | undefined;
  private msgParts: Buffer[] = [];
  private msgLen = 0;

  constructor(
    private readonly onRecord: RecordHandler,
    private readonly maxMessage = DOCKER_PARTIAL_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length)
      i = this.timestamp === undefined ? this.readTimestamp(chunk, i) : this.readMessage(chunk, i);
  }

  /** The stream ended: what is left is the last record. */
  end(): void {
    if (this.timestamp !== undefined && this.msgLen > 0) this.emit();
    this.timestamp = undefined;
    this.tsParts = [];
  }

  private readTimestamp(chunk: Buffer, from: number): number {
    const sp = chunk.indexOf(0x20, from);
    if (sp < 0) {
      this.tsParts.push(chunk.subarray(from));
      return chunk.length;
    }
    this.tsParts.push(chunk.subarray(from, sp));
    this.timestamp = Buffer.concat(this.tsParts).toString('latin1');
    this.tsParts = [];
    return sp + 1;
  }

  private readMessage(chunk: Buffer, from: number): number {
    const limit = Math.min(chunk.length, from + this.maxMessage - this.msgLen);
    const nl = chunk.indexOf(0x0a, from);
    const stop = nl >= 0 && nl < limit ? nl + 1 : limit;
    this.msgParts.push(chunk.subarray(from, stop));
    this.msgLen += stop - from;
    if (stop === nl + 1 || this.msgLen >= this.maxMessage) this.emit();
    return stop;
  }

  private emit(): void {
    const message = Buffer.concat(this.msgParts, this.msgLen);
    const timestamp = this.timestamp ?? '';
    this.timestamp = undefined;
    this.msgParts = [];
    this.msgLen = 0;
    this.onRecord('stdout', timestamp, message);
  }
}

/** An RFC 3339 time as Docker writes it in front of each record (timestamps=true). */
export const DOCKER_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;
