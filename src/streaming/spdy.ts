import type { IncomingMessage } from 'http';
import type { Duplex } from 'stream';
import { PassThrough } from 'stream';
import * as spdy from 'spdy-transport';
import type { SpdyConnection, SpdyHeaders, SpdyStream } from 'spdy-transport';
import {
  ACCEPTED_PROTOCOLS_HEADER,
  STREAM_PROTOCOL_HEADER,
  createResizeDecoder,
  resizeRelay,
  errorStreamPayload,
  headerValues,
  negotiate,
  supportsResize,
  type SessionOutcome,
} from './remotecommand';
import type { StreamSet } from './session';

/** spdy-transport internals touched below (no public API for them). */
interface SideInternals {
  isEmpty(): boolean;
}
interface ParserInternals {
  onSynHeadFrame(type: number, flags: number, body: unknown, cb: (err: Error | null, frame?: unknown) => void): void;
  parseKVs(buf: unknown, cb: (err: Error | null, headers?: Record<string, unknown>) => void): void;
}
interface ConnInternals {
  _spdyState: { parser: ParserInternals; window: { send: SideInternals }; framer: { readableLength: number } };
}
interface StreamInternals {
  _spdyState: { window: { send: SideInternals } };
}
interface StreamReadInternals {
  push(chunk: Buffer | null): boolean;
  _read(n: number): void;
}

/**
 * Kubernetes SPDY streams carry only their own headers (streamType, port,
 * requestID); spdy-transport's parser rejects a SYN_STREAM without :method and
 * :path. For this connection's parser only, SYN_STREAM headers get neutral
 * values when those are missing.
 */
function acceptStreamsWithoutPath(conn: SpdyConnection): void {
  const parser = (conn as unknown as ConnInternals)._spdyState.parser;
  const onSynHeadFrame = parser.onSynHeadFrame;
  parser.onSynHeadFrame = function (this: ParserInternals, type, flags, body, cb) {
    if (type !== 0x01) return onSynHeadFrame.call(this, type, flags, body, cb);
    const parseKVs = Object.getPrototypeOf(this).parseKVs as ParserInternals['parseKVs'];
    // parseKVs is called synchronously by onSynHeadFrame; the override lives for that call only
    this.parseKVs = function (this: ParserInternals, buf, done) {
      parseKVs.call(this, buf, (err, headers) => {
        if (!err && headers) {
          if (headers[':method'] === undefined) headers[':method'] = 'POST';
          if (headers[':path'] === undefined) headers[':path'] = '/';
        }
        done(err, headers);
      });
    };
    try {
      onSynHeadFrame.call(this, type, flags, body, cb);
    } finally {
      delete (this as Partial<ParserInternals>).parseKVs;
    }
  };
}

/**
 * Go's spdystream (client-go, crictl, kubelet) never sends WINDOW_UPDATE, so
 * honouring SPDY flow control would stall output after the first 64 KiB.
 * Like the kubelet's own server we do not wait for window updates; TCP
 * backpressure (see `writeGate`) bounds what we buffer instead.
 */
function ignoreSendWindow(side: SideInternals): void {
  side.isEmpty = () => false;
}

export interface SpdyUpgrade {
  conn: SpdyConnection;
  protocol: string;
  socket: Duplex;
}

/**
 * Answers an `Upgrade: SPDY/3.1` request (101 with the negotiated
 * X-Stream-Protocol-Version) and starts a server connection on the socket.
 * On a failed negotiation it writes the HTTP error itself and returns undefined.
 */
export function acceptSpdy(req: IncomingMessage, socket: Duplex, head: Buffer, serverProtocols: readonly string[]): SpdyUpgrade | undefined {
  const offered = headerValues(req.headers[STREAM_PROTOCOL_HEADER]);
  // no header at all: a pre-versioning client, which speaks the oldest protocol
  const protocol = offered.length === 0 ? serverProtocols[serverProtocols.length - 1] : negotiate(offered, serverProtocols);
  if (!protocol) {
    socket.end(
      `HTTP/1.1 403 Forbidden\r\n${ACCEPTED_PROTOCOLS_HEADER}: ${serverProtocols.join(', ')}\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n` +
        `unable to upgrade: no common stream protocol (offered ${offered.join(', ')})\n`,
    );
    return undefined;
  }
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
      `X-Stream-Protocol-Version: ${protocol}\r\n\r\n`,
  );
  if (head.length) socket.unshift(head);
  // autoSpdy31: the upgrade says SPDY/3.1, whose session-level window a
  // flow-controlling client waits on (SPDY/3 frames do not tell the versions apart)
  const conn = spdy.connection.create(socket, { protocol: 'spdy', isServer: true, maxStreams: 1000, autoSpdy31: true });
  acceptStreamsWithoutPath(conn);
  holdSocketWhileStreamsFull(conn, socket);
  ignoreSendWindow((conn as unknown as ConnInternals)._spdyState.window.send);
  conn.on('error', () => undefined); // socket errors end up as 'close'
  return { conn, protocol, socket };
}

/** Answers a stream (client-go waits for the SYN_REPLY) and lifts its send window. */
export function acceptStream(stream: SpdyStream): void {
  ignoreSendWindow((stream as unknown as StreamInternals)._spdyState.window.send);
  stream.on('error', () => undefined);
  stream.respond(200, {});
}

export function header(headers: SpdyHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()] ?? headers[name];
  return Array.isArray(v) ? v[0] : v;
}

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
export function writeGate(stream: SpdyStream, up: Pick<SpdyUpgrade, 'socket' | 'conn'>): FlushingGate {
  const gate = new PassThrough({ highWaterMark: 256 * 1024 }) as FlushingGate;
  const socket = up.socket as Duplex & { writableLength: number };
  const framer = (up.conn as unknown as ConnInternals)._spdyState.framer;
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
function holdSocketWhileStreamsFull(conn: SpdyConnection, socket: Duplex): void {
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
export function endAndWait(w: NodeJS.WritableStream & { writableFinished?: boolean; destroyed?: boolean }): Promise<void> {
  return new Promise((resolve) => {
    if (w.destroyed || w.writableFinished) return resolve();
    w.once('finish', () => resolve());
    w.once('close', () => resolve());
    w.end();
  });
}

export interface RemoteCommandWants {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/**
 * Waits for the streams a remotecommand client opens (error, and stdin/stdout/
 * stderr/resize as requested) and exposes them as a StreamSet. Rejects when the
 * client does not open them in time or goes away first.
 */
export function spdyRemoteCommand(up: SpdyUpgrade, wants: RemoteCommandWants, timeoutMs = 30_000): Promise<StreamSet> {
  const { conn, protocol, socket } = up;
  const expected = new Set<string>(['error']);
  if (wants.stdin) expected.add('stdin');
  if (wants.stdout) expected.add('stdout');
  if (wants.stderr && !wants.tty) expected.add('stderr');
  if (wants.tty && supportsResize(protocol)) expected.add('resize');
  const got = new Map<string, SpdyStream>();
  const gone = new AbortController();
  socket.once('close', () => gone.abort());
  const resize = resizeRelay();

  return new Promise<StreamSet>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`timed out waiting for client streams (have ${[...got.keys()].join(',')})`)), timeoutMs);
    const onClose = (): void => fail(new Error('client closed the connection before opening its streams'));
    socket.once('close', onClose);
    function fail(err: Error): void {
      clearTimeout(timer);
      socket.off('close', onClose);
      socket.destroy();
      reject(err);
    }
    conn.on('stream', (stream) => {
      acceptStream(stream);
      const type = header(stream.headers, 'streamType') ?? '';
      if (got.has(type) || !['error', 'stdin', 'stdout', 'stderr', 'resize'].includes(type)) {
        stream.resume();
        stream.end();
        return;
      }
      got.set(type, stream);
      if (type === 'resize') {
        const decode = createResizeDecoder(resize.push);
        stream.on('data', decode);
      } else if (type !== 'stdin') {
        stream.resume(); // nothing comes from the client here; reading lets the stream close
      }
      // stdin and resize are left open both ways: ending our (unused) half ends spdy-transport's read side too,
      // and later input or window changes would be lost; the connection's close ends them
      if (![...expected].every((t) => got.has(t))) return;
      clearTimeout(timer);
      socket.off('close', onClose);
      const stdoutStream = got.get('stdout');
      const stderrStream = got.get('stderr');
      const stdout = stdoutStream ? writeGate(stdoutStream, up) : null;
      const stderr = stderrStream && !wants.tty ? writeGate(stderrStream, up) : null;
      let finished = false;
      resolve({
        protocol,
        stdin: got.get('stdin') ?? null,
        stdout,
        stderr,
        gone: gone.signal,
        onResize: resize.onResize,
        async finish(outcome: SessionOutcome) {
          if (finished) return;
          finished = true;
          // output first: client-go reads the error stream only after stdout/stderr end
          await Promise.all([stdout ? endAndWait(stdout) : undefined, stderr ? endAndWait(stderr) : undefined]);
          // 'finish' only means the gate took the data: wait until it reached the SPDY streams
          await Promise.all([stdout?.flushed, stderr?.flushed]);
          for (const t of ['stdout', 'stderr'] as const) {
            const s = got.get(t);
            if (s && !s.writableEnded) s.end();
          }
          const errStream = got.get('error');
          if (errStream) {
            const payload = errorStreamPayload(protocol, outcome);
            if (payload) errStream.write(payload);
            // the exit status must be on the wire before GOAWAY, or the client reads an empty stream
            await endAndWait(errStream);
          }
          closeConnection(up);
        },
      });
    });
  });
}

/** GOAWAY, then the socket goes once streams are done; a stuck client is cut off after a grace period. */
export function closeConnection(up: SpdyUpgrade, graceMs = 10_000): void {
  up.conn.end();
  const t = setTimeout(() => up.socket.destroy(), graceMs);
  t.unref();
  up.socket.once('close', () => clearTimeout(t));
}
