import type { IncomingMessage } from 'http';
import type { Duplex } from 'stream';
import * as spdy from 'spdy-transport';
import type { SpdyConnection, SpdyHeaders, SpdyStream } from 'spdy-transport';
import { ACCEPTED_PROTOCOLS_HEADER, STREAM_PROTOCOL_HEADER, headerValues, negotiate } from './remotecommand';
import { holdSocketWhileStreamsFull } from './spdy-backpressure';
import { connInternals, streamInternals, type ParserInternals, type SideInternals } from './spdy-internals';

/**
 * Kubernetes SPDY streams carry only their own headers (streamType, port,
 * requestID); spdy-transport's parser rejects a SYN_STREAM without :method and
 * :path. For this connection's parser only, SYN_STREAM headers get neutral
 * values when those are missing.
 */
function acceptStreamsWithoutPath(conn: SpdyConnection): void {
  const parser = connInternals(conn).parser;
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
export function acceptSpdy(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  serverProtocols: readonly string[],
): SpdyUpgrade | undefined {
  const offered = headerValues(req.headers[STREAM_PROTOCOL_HEADER]);
  // no header at all: a pre-versioning client, which speaks the oldest protocol
  const protocol =
    offered.length === 0 ? serverProtocols[serverProtocols.length - 1] : negotiate(offered, serverProtocols);
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
  ignoreSendWindow(connInternals(conn).window.send);
  conn.on('error', () => undefined); // socket errors end up as 'close'
  return { conn, protocol, socket };
}

/** Answers a stream (client-go waits for the SYN_REPLY) and lifts its send window. */
export function acceptStream(stream: SpdyStream): void {
  ignoreSendWindow(streamInternals(stream).window.send);
  stream.on('error', () => undefined);
  stream.respond(200, {});
}

export function header(headers: SpdyHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()] ?? headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** GOAWAY, then the socket goes once streams are done; a stuck client is cut off after a grace period. */
export function closeConnection(up: SpdyUpgrade, graceMs = 10_000): void {
  up.conn.end();
  const t = setTimeout(() => up.socket.destroy(), graceMs);
  t.unref();
  up.socket.once('close', () => clearTimeout(t));
}
