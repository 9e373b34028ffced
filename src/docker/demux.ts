import type { Readable, Writable } from 'stream';

/** Which of the container's streams a frame of Docker's multiplexed stream carries. */
export type FrameStream = 'stdin' | 'stdout' | 'stderr';

/**
 * Incremental parser of Docker's multiplexed stream (attach, exec and logs of a container
 * without a tty): each frame is an 8-byte header (stream type, 3 zero bytes, big-endian
 * payload length) and the payload. The one implementation crishim has of that framing.
 */
export class FrameParser {
  private buf: Buffer = Buffer.alloc(0);
  constructor(private readonly onFrame: (stream: FrameStream, payload: Buffer) => void) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 8) {
      const size = this.buf.readUInt32BE(4);
      if (this.buf.length < 8 + size) break;
      const kind = this.buf[0];
      this.onFrame(kind === 2 ? 'stderr' : kind === 0 ? 'stdin' : 'stdout', this.buf.subarray(8, 8 + size));
      this.buf = this.buf.subarray(8 + size);
    }
  }
}

/** The frames of a multiplexed stream as they complete, for callers that must await each write. */
export async function* demuxFrames(
  src: AsyncIterable<unknown>,
): AsyncGenerator<{ stream: FrameStream; payload: Buffer }> {
  let ready: Array<{ stream: FrameStream; payload: Buffer }> = [];
  const parser = new FrameParser((stream, payload) => ready.push({ stream, payload }));
  for await (const piece of src) {
    parser.push(piece as Buffer);
    const out = ready;
    ready = [];
    yield* out;
  }
}

/**
 * Writes each frame's payload to stdout or stderr (a null destination discards it) without
 * waiting for either: for bounded sinks that never push back (ExecSync's capped buffers).
 */
export function demuxInto(
  src: Readable,
  stdout: Writable | NodeJS.WritableStream | null,
  stderr: Writable | NodeJS.WritableStream | null,
): void {
  const parser = new FrameParser((stream, payload) => {
    const dst = stream === 'stderr' ? stderr : stdout;
    if (dst && payload.length) dst.write(payload);
  });
  src.on('data', (chunk: Buffer) => parser.push(chunk));
}
