import type { Socket } from 'net';
import type { SpdyStream } from 'spdy-transport';
import type { WebSocket } from 'ws';
import type { Logger } from '../logging/logger';
import type { PodDialer } from './pod-dialer';
import { parsePort } from './requests';
import { acceptStream, header, type SpdyUpgrade } from './spdy';
import { writeGate } from './spdy-backpressure';
import { writeOrPause, wsChannels } from './websocket';

const errMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

interface Pair {
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/**
 * portforward.k8s.io over SPDY: the client opens an error stream and a data
 * stream per connection (same `requestID` and `port` headers); each pair
 * becomes one TCP connection to the pod port, half-closes passed through.
 */
export function spdyPortForward(
  up: SpdyUpgrade,
  dialer: PodDialer,
  podSandboxId: string,
  log: Logger,
  pairTimeoutMs = 30_000,
): void {
  const pairs = new Map<string, Pair>();
  const sockets = new Set<Socket>();
  up.socket.once('close', () => {
    for (const p of pairs.values()) clearTimeout(p.timer);
    pairs.clear();
    for (const s of sockets) s.destroy();
    dialer.close();
    log.info('port-forward session closed', { podSandboxId });
  });
  up.conn.on('stream', (stream) => {
    acceptStream(stream);
    const type = header(stream.headers, 'streamType');
    let requestID = header(stream.headers, 'requestID');
    if (!requestID) {
      // clients older than kube 1.5 pair streams by id: error, then data = error + 2
      requestID = String(type === 'data' ? stream.id - 2 : stream.id);
    }
    if (type !== 'data' && type !== 'error') {
      stream.abort('PROTOCOL_ERROR');
      return;
    }
    let pair = pairs.get(requestID);
    if (!pair) {
      const id = requestID;
      pair = {
        timer: setTimeout(() => {
          const p = pairs.get(id);
          pairs.delete(id);
          log.warn('port-forward stream pair incomplete; resetting', { podSandboxId, requestID: id });
          p?.data?.abort();
          p?.error?.abort();
        }, pairTimeoutMs),
      };
      pairs.set(requestID, pair);
    }
    if (pair[type]) {
      stream.abort('PROTOCOL_ERROR');
      return;
    }
    pair[type] = stream;
    if (!pair.data || !pair.error) return;
    clearTimeout(pair.timer);
    pairs.delete(requestID);
    void forwardPair(pair.data, pair.error, header(stream.headers, 'port'), requestID);
  });

  async function forwardPair(
    data: SpdyStream,
    error: SpdyStream,
    portHeader: string | undefined,
    requestID: string,
  ): Promise<void> {
    error.resume(); // the client sends nothing here; reading lets the stream close
    const port = parsePort(portHeader);
    const fail = (msg: string): void => {
      error.end(msg);
      data.resume();
      data.end();
    };
    if (port === undefined) return fail(`invalid port ${JSON.stringify(portHeader)}`);
    let sock: Socket;
    try {
      sock = await dialer.dial(port);
    } catch (err) {
      log.info('port-forward connect failed', { podSandboxId, port, error: errMessage(err) });
      return fail(`error forwarding port ${port} to pod ${podSandboxId}: ${errMessage(err)}`);
    }
    sockets.add(sock);
    log.debug('port-forward connection open', { podSandboxId, port, requestID });
    const out = writeGate(data, up);
    data.pipe(sock); // client FIN -> half-close towards the pod
    sock.pipe(out); // pod FIN -> FIN on the data stream
    sock.on('error', () => undefined);
    const done = (): void => {
      sockets.delete(sock);
      if (!error.writableEnded) error.end();
    };
    sock.once('close', done);
    data.once('close', () => sock.destroy());
  }
}

/**
 * Port forwarding over WebSocket (v4.channel.k8s.io): ports are fixed at
 * connect time; port i uses channel 2i for data and 2i+1 for errors, and the
 * first frame on each is the port, 2 bytes little-endian.
 */
export function wsPortForward(
  ws: WebSocket,
  ports: number[],
  dialer: PodDialer,
  podSandboxId: string,
  log: Logger,
): void {
  const chans = wsChannels(ws);
  const sockets: (Socket | undefined)[] = ports.map(() => undefined);
  const pendingData: Buffer[][] = ports.map(() => []);
  let open = ports.length;
  const portFrame = (p: number): Buffer => Buffer.from([p & 0xff, p >> 8]);
  ws.on('error', () => undefined);
  ws.once('close', () => {
    for (const s of sockets) s?.destroy();
    dialer.close();
    log.info('port-forward session closed', { podSandboxId });
  });
  const connDone = (): void => {
    if (--open === 0) ws.close(1000);
  };
  chans.onData((ch, data) => {
    const i = ch >> 1;
    if (ch % 2 !== 0 || i >= ports.length) return;
    const s = sockets[i];
    if (s) writeOrPause(ws, s, data);
    else pendingData[i].push(data);
  });
  ports.forEach((port, i) => {
    void (async () => {
      await chans.send(2 * i, portFrame(port));
      await chans.send(2 * i + 1, portFrame(port));
      let sock: Socket;
      try {
        sock = await dialer.dial(port);
      } catch (err) {
        log.info('port-forward connect failed', { podSandboxId, port, error: errMessage(err) });
        await chans.send(
          2 * i + 1,
          Buffer.from(`error forwarding port ${port} to pod ${podSandboxId}: ${errMessage(err)}`),
        );
        connDone();
        return;
      }
      if (ws.readyState !== ws.OPEN) {
        sock.destroy();
        return;
      }
      sockets[i] = sock;
      for (const d of pendingData[i].splice(0)) sock.write(d);
      sock.on('error', () => undefined);
      sock.once('close', connDone);
      for await (const chunk of sock) await chans.send(2 * i, chunk as Buffer);
    })().catch((err) =>
      log.debug('port-forward websocket connection ended', { podSandboxId, port, error: errMessage(err) }),
    );
  });
}
