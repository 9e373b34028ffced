import type { IncomingMessage } from 'http';
import type { Duplex } from 'stream';
import { PassThrough, Writable } from 'stream';
import { WebSocket, WebSocketServer } from 'ws';
import {
  createResizeDecoder,
  errorStreamPayload,
  resizeRelay,
  supportsResize,
  type SessionOutcome,
} from './remotecommand';
import type { StreamSet } from './session';

/** Channel ids of the remotecommand WebSocket protocols. */
export const CH_STDIN = 0;
export const CH_STDOUT = 1;
export const CH_STDERR = 2;
export const CH_ERROR = 3;
export const CH_RESIZE = 4;
/** v5: `[255, ch]` says the sender closed channel ch (e.g. stdin EOF). */
export const CH_CLOSE = 255;

/**
 * A WebSocket carrying numbered channels: binary frames are `[ch, ...data]`;
 * `*.base64.*` protocols use text frames `"<ch digit><base64 data>"`.
 */
export interface WsChannels {
  readonly protocol: string;
  readonly ws: WebSocket;
  send(channel: number, data: Buffer): Promise<void>;
  onData(listener: (channel: number, data: Buffer) => void): void;
  onChannelClose(listener: (channel: number) => void): void;
}

export function wsChannels(ws: WebSocket): WsChannels {
  const protocol = ws.protocol;
  const base64 = protocol.includes('base64');
  const dataListeners: ((ch: number, d: Buffer) => void)[] = [];
  const closeListeners: ((ch: number) => void)[] = [];
  ws.on('message', (raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    const msg = Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw as Buffer);
    if (msg.length === 0) return;
    let ch: number;
    let data: Buffer;
    if (base64 && !isBinary) {
      const text = msg.toString('utf8');
      ch = text.charCodeAt(0) - 48;
      data = Buffer.from(text.slice(1), 'base64');
    } else {
      ch = msg[0];
      data = msg.subarray(1);
    }
    if (ch === CH_CLOSE && protocol.startsWith('v5.')) {
      if (data.length) for (const l of closeListeners) l(data[0]);
      return;
    }
    for (const l of dataListeners) l(ch, data);
  });
  return {
    protocol,
    ws,
    send(channel, data) {
      return new Promise((resolve) => {
        if (ws.readyState !== WebSocket.OPEN) return resolve();
        const frame = base64
          ? String.fromCharCode(48 + channel) + data.toString('base64')
          : Buffer.concat([Buffer.from([channel]), data]);
        // the callback fires once the frame is handed to the socket: that is our backpressure
        ws.send(frame, { binary: !base64 }, () => resolve());
      });
    },
    onData: (l) => void dataListeners.push(l),
    onChannelClose: (l) => void closeListeners.push(l),
  };
}

/** Completes a WebSocket upgrade when the client offers one of our subprotocols; otherwise answers 400 itself. */
export function acceptWebSocket(
  wss: WebSocketServer,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  serverProtocols: readonly string[],
): Promise<WebSocket | undefined> {
  const offered = String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!offered.some((p) => serverProtocols.includes(p))) {
    socket.end(
      'HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n' +
        `no supported websocket subprotocol (want one of ${serverProtocols.join(', ')})\n`,
    );
    return Promise.resolve(undefined);
  }
  return new Promise((resolve) => wss.handleUpgrade(req, socket, head, (ws) => resolve(ws)));
}

/** The server's choice among offered subprotocols: client order, as in the kubelet. */
export function pickProtocol(serverProtocols: readonly string[]): (offered: Set<string>) => string | false {
  return (offered) => [...offered].find((p) => serverProtocols.includes(p)) ?? false;
}

/**
 * Writes client input on; when the destination is backed up (the process does not read
 * its stdin, the pod does not read its socket), stops reading the WebSocket until it
 * drains, so a flood waits in the client's TCP send buffer instead of our memory.
 */
export function writeOrPause(ws: WebSocket, dst: Writable, data: Buffer): void {
  if (dst.write(data) || ws.isPaused) return;
  ws.pause();
  const resume = (): void => {
    dst.off('drain', resume);
    dst.off('close', resume);
    if (ws.readyState === WebSocket.OPEN) ws.resume();
  };
  dst.on('drain', resume);
  dst.on('close', resume);
}

class ChannelWriter extends Writable {
  constructor(
    private readonly chans: WsChannels,
    private readonly channel: number,
  ) {
    super({ highWaterMark: 64 * 1024 });
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.chans.send(this.channel, chunk).then(() => cb(), cb);
  }
}

export interface WsWants {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** Exposes a remotecommand WebSocket as a StreamSet. */
export function wsRemoteCommand(ws: WebSocket, wants: WsWants): StreamSet {
  const chans = wsChannels(ws);
  const protocol = chans.protocol;
  const stdin = wants.stdin ? new PassThrough() : null;
  const stdout = wants.stdout ? new ChannelWriter(chans, CH_STDOUT) : null;
  const stderr = wants.stderr && !wants.tty ? new ChannelWriter(chans, CH_STDERR) : null;
  const gone = new AbortController();
  let finished = false;
  const resize = resizeRelay();
  const decodeResize = createResizeDecoder(resize.push);
  chans.onData((ch, data) => {
    if (ch === CH_STDIN && stdin && !stdin.writableEnded) writeOrPause(ws, stdin, data);
    else if (ch === CH_RESIZE && wants.tty && supportsResize(protocol)) decodeResize(data);
  });
  chans.onChannelClose((ch) => {
    if (ch === CH_STDIN && stdin && !stdin.writableEnded) stdin.end();
  });
  ws.on('error', () => undefined);
  ws.once('close', () => {
    if (stdin && !stdin.writableEnded) stdin.end();
    if (!finished) gone.abort();
  });
  return {
    protocol,
    stdin,
    stdout,
    stderr,
    gone: gone.signal,
    onResize: resize.onResize,
    async finish(outcome: SessionOutcome) {
      if (finished) return;
      finished = true;
      const flush = (w: Writable | null): Promise<void> =>
        w ? new Promise((r) => (w.writableFinished ? r() : w.end(() => r()))) : Promise.resolve();
      await Promise.all([flush(stdout), flush(stderr)]);
      const payload = errorStreamPayload(protocol, outcome);
      if (payload) await chans.send(CH_ERROR, payload);
      ws.close(1000);
    },
  };
}
