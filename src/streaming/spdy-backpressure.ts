import type { Duplex } from 'stream';
import { PassThrough } from 'stream';
import type { SpdyConnection, SpdyStream } from 'spdy-transport';
import { connInternals, type StreamReadInternals } from './spdy-internals';

/**
 * Waits for the socket's 'drain' (or its close), at most `ms`: the pipe from the framer
 * may run after our listener and empty the queue without a further 'drain'.
 */
function drainOrTimeout(socket: Duplex, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      socket.off('drain', done);
      socket.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    socket.on('drain', done);
    socket.on('close', done);
  });
}

/** Bytes queued towards the client beyond which output waits: spdy-transport's framer plus the socket. */
const OUTBOUND_LIMIT = 1024 * 1024;

/**
 * A writable for an outgoing SPDY stream that waits while the connection is backed up.
 * spdy-transport no longer throttles on the SPDY window (flow control off), and its frame
 * scheduler completes every stream write at once, queueing frames in its framer whether
 * the socket takes them or not. So the gate watches that queue and the socket's: past
 * 1 MiB it waits for the socket to drain (the pipe from the framer then moves more), so a
 * client that stops reading stops us reading Docker instead of filling our memory.
 */
export function writeGate(stream: SpdyStream, up: { socket: Duplex; conn: SpdyConnection }): FlushingGate {
  const gate = new PassThrough({ highWaterMark: 256 * 1024 }) as FlushingGate;
  const socket = up.socket as Duplex & { writableLength: number };
  const framer = connInternals(up.conn).framer;
  gate.flushed = (async () => {
    for await (const chunk of gate) {
      if (stream.destroyed) continue;
      stream.write(chunk as Buffer);
      while (!socket.destroyed && framer.readableLength + socket.writableLength > OUTBOUND_LIMIT) {
        await drainOrTimeout(socket, 50);
      }
    }
    if (!stream.destroyed) stream.end();
  })().catch(() => undefined);
  return gate;
}

/**
 * Inbound back-pressure. spdy-transport pushes every DATA frame into its stream whether
 * anyone reads or not, and clients like client-go ignore the SPDY window, so a stdin flood
 * into a process that does not read (or a port-forward to a pod that does not) would be
 * buffered without bound. While any stream holds more than its high-water mark, reading
 * from the client's socket stops (TCP then slows the client); it resumes when that stream
 * is read again. The socket is piped into spdy-transport's parser, and the pipe may resume
 * it after a drain: a 'resume' while held pauses it again.
 */
export function holdSocketWhileStreamsFull(conn: SpdyConnection, socket: Duplex): void {
  const full = new Set<SpdyStream>();
  const release = (stream: SpdyStream): void => {
    if (full.delete(stream) && full.size === 0) socket.resume();
  };
  socket.on('resume', () => {
    if (full.size > 0) socket.pause();
  });
  conn.on('stream', (stream: SpdyStream) => {
    const s = stream as unknown as StreamReadInternals;
    const push = s.push.bind(stream);
    s.push = (chunk: Buffer | null): boolean => {
      const ok = push(chunk);
      if (!ok && chunk !== null && !full.has(stream)) {
        full.add(stream);
        socket.pause();
      }
      return ok;
    };
    const read = s._read.bind(stream);
    s._read = (n: number): void => {
      release(stream);
      read(n);
    };
    stream.once('close', () => release(stream));
  });
}

/** A writeGate, with a promise for when everything written has reached the SPDY stream. */
export type FlushingGate = PassThrough & { flushed: Promise<void> };

/** Ends a writable and resolves once everything written before was handed on. */
export function endAndWait(
  w: NodeJS.WritableStream & { writableFinished?: boolean; destroyed?: boolean },
): Promise<void> {
  return new Promise((resolve) => {
    if (w.destroyed || w.writableFinished) return resolve();
    w.once('finish', () => resolve());
    w.once('close', () => resolve());
    w.end();
  });
}
