import { demuxFrames } from '../docker/demux';
import type { Readable, Writable } from 'stream';

/** Writes and waits for 'drain' when the destination buffers too much, so a slow client slows the exec down instead of filling our memory. */
export function writeWithBackpressure(dst: Writable, chunk: Buffer): Promise<void> {
  if (dst.destroyed || dst.writableEnded) return Promise.resolve();
  if (dst.write(chunk)) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      dst.off('drain', done);
      dst.off('close', done);
      dst.off('error', done);
      resolve();
    };
    dst.on('drain', done);
    dst.on('close', done);
    dst.on('error', done);
  });
}

/**
 * Copies Docker's multiplexed attach/exec stream to stdout/stderr with backpressure.
 * A null destination discards its stream. Resolves when the source ends.
 */
export async function copyDemuxed(src: Readable, stdout: Writable | null, stderr: Writable | null): Promise<void> {
  for await (const { stream, payload } of demuxFrames(src)) {
    const dst = stream === 'stderr' ? stderr : stream === 'stdout' ? stdout : null;
    if (dst && payload.length) await writeWithBackpressure(dst, payload);
  }
}

/** Copies a raw (tty) stream with backpressure. */
export async function copyRaw(src: Readable, dst: Writable | null): Promise<void> {
  for await (const piece of src) {
    if (dst) await writeWithBackpressure(dst, piece as Buffer);
  }
}
