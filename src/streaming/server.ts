import * as http from 'http';
import type { AddressInfo } from 'net';
import type { Duplex } from 'stream';
import type { DockerApi } from '../docker/client';
import type { Logger } from '../logging/logger';
import { httpError } from './http-error';
import type { SessionHandler } from './sessions';
import { createTokenStore } from './tokens';

export interface StreamingConfig {
  /** Default 127.0.0.1: the kubelet proxies streams, nobody else needs to reach us. */
  bindAddress: string;
  /** 0 = ephemeral. */
  port: number;
  /** Host put into URLs when bound to 0.0.0.0/:: (default: the bind address, or 127.0.0.1). */
  advertiseAddress?: string;
}

export interface StreamingServerOptions extends StreamingConfig {
  docker: DockerApi;
  logger: Logger;
  /** Token lifetime, default 60 s. */
  tokenTtlMs?: number;
}

export type StreamRequest =
  | { kind: 'exec'; containerId: string; cmd: string[]; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }
  | { kind: 'attach'; containerId: string; tty: boolean; stdin: boolean; stdout: boolean; stderr: boolean }
  | { kind: 'portforward'; podSandboxId: string; ports: number[] };

export interface StreamingServer {
  /** e.g. `http://127.0.0.1:41234` */
  readonly baseUrl: string;
  /** Remembers the request and returns its single-use URL (`<baseUrl>/<kind>/<token>`). */
  issueUrl(req: StreamRequest): string;
  /** Open client connections (for tests and diagnostics). */
  readonly openConnections: number;
  close(): Promise<void>;
}

const errMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export async function startStreamingServer(opts: StreamingServerOptions): Promise<StreamingServer> {
  const log = opts.logger.child({ component: 'streaming' });
  const tokens = createTokenStore<StreamRequest>({ ttlMs: opts.tokenTtlMs });
  const sockets = new Set<Duplex>();
  const server = http.createServer((req, res) => {
    // plain requests are never served: a token is only redeemed by an upgrade
    res.writeHead(400, { 'Content-Type': 'text/plain' }).end('streaming endpoints need an SPDY/3.1 or WebSocket upgrade\n');
  });
  // SPDY, WebSocket and the session code are loaded on the first upgrade: most nodes
  // never exec, attach or port-forward, and they would hold that memory all day
  let sessions: Promise<SessionHandler> | undefined;
  const sessionHandler = (): Promise<SessionHandler> =>
    (sessions ??= import('./sessions').then((m) => m.createSessionHandler(opts.docker, log)));

  server.on('connection', (s: Duplex) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'http://streaming');
    const m = /^\/(exec|attach|portforward)\/([A-Za-z0-9_-]+)$/.exec(url.pathname);
    if (!m) return httpError(socket, 404, 'Not Found', 'not found\n');
    const redeemed = tokens.consume(m[2]);
    if (!redeemed.ok) {
      log.info('streaming request with unusable token', { kind: m[1], reason: redeemed.reason });
      return redeemed.reason === 'expired'
        ? httpError(socket, 401, 'Unauthorized', 'token expired\n')
        : httpError(socket, 404, 'Not Found', 'unknown or already used token\n');
    }
    const sr = redeemed.value;
    if (sr.kind !== m[1]) return httpError(socket, 404, 'Not Found', 'not found\n');
    const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
    const isSpdy = upgrade.startsWith('spdy/');
    if (!isSpdy && upgrade !== 'websocket') return httpError(socket, 400, 'Bad Request', 'expected Upgrade: SPDY/3.1 or websocket\n');
    void sessionHandler()
      .then((h) => h.serve(sr, req, url, socket, head, isSpdy))
      .catch((err: unknown) => {
        log.warn('streaming session failed', { kind: sr.kind, error: errMessage(err), ...ids(sr) });
        socket.destroy();
      });
  });

  function ids(sr: StreamRequest): Record<string, string> {
    return sr.kind === 'portforward' ? { podSandboxId: sr.podSandboxId } : { containerId: sr.containerId };
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.bindAddress, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const unspecified = opts.bindAddress === '0.0.0.0' || opts.bindAddress === '::' || opts.bindAddress === '';
  const host = opts.advertiseAddress ?? (unspecified ? '127.0.0.1' : opts.bindAddress);
  const baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
  log.info('streaming server listening', { baseUrl, bindAddress: opts.bindAddress });

  return {
    baseUrl,
    issueUrl(req: StreamRequest): string {
      return `${baseUrl}/${req.kind}/${tokens.issue(req)}`;
    },
    get openConnections() {
      return sockets.size;
    },
    async close() {
      tokens.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      if (sessions) (await sessions.catch(() => undefined))?.close();
      await closed;
    },
  };
}
