import * as http from 'http';
import type { Duplex } from 'stream';
import type { DockerEngine } from '../docker/engine';
import type { Logger } from '../logging/logger';
import { baseUrlFor, listen, OpenSockets } from './http-listener';
import { sessionIds, type StreamRequest } from './requests';
import type { SessionStack } from './session-stack';
import { createTokenStore } from './tokens';
import { httpError, routeUpgrade } from './upgrade-route';

export type { StreamRequest } from './requests';

export interface StreamingConfig {
  /** Default 127.0.0.1: the kubelet proxies streams, nobody else needs to reach us. */
  bindAddress: string;
  /** 0 = ephemeral. */
  port: number;
  /** Host put into URLs when bound to 0.0.0.0/:: (default: the bind address, or 127.0.0.1). */
  advertiseAddress?: string;
}

export interface StreamingServerOptions extends StreamingConfig {
  docker: DockerEngine;
  logger: Logger;
  /** Token lifetime, default 60 s. */
  tokenTtlMs?: number;
}

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

/** The exec/attach/port-forward server: tokens, routing, transports and Docker-backed sessions wired together. */
export async function startStreamingServer(opts: StreamingServerOptions): Promise<StreamingServer> {
  const log = opts.logger.child({ component: 'streaming' });
  const tokens = createTokenStore<StreamRequest>({ ttlMs: opts.tokenTtlMs });
  // SPDY, WebSocket and the session code are loaded on the first upgrade: most nodes never
  // exec, attach or port-forward, and would hold that memory all day
  let stack: Promise<SessionStack> | undefined;
  const sessions = (): Promise<SessionStack> =>
    (stack ??= import('./session-stack').then((m) => m.createSessionStack(opts.docker, log)));
  const server = http.createServer((_req, res) => {
    // plain requests are never served: a token is only redeemed by an upgrade
    res
      .writeHead(400, { 'Content-Type': 'text/plain' })
      .end('streaming endpoints need an SPDY/3.1 or WebSocket upgrade\n');
  });
  const sockets = new OpenSockets(server);

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => undefined);
    const route = routeUpgrade(req, tokens);
    if (!route.ok) {
      if (route.tokenProblem) log.info('streaming request with unusable token', route.tokenProblem);
      return httpError(socket, route.refusal);
    }
    const sr = route.request;
    void sessions()
      .then((st) => st.dispatch.serve(sr, route.url, { req, socket, head, transport: route.transport }))
      .catch((err: unknown) => {
        log.warn('streaming session failed', { kind: sr.kind, error: errMessage(err), ...sessionIds(sr) });
        socket.destroy();
      });
  });

  const port = await listen(server, opts.port, opts.bindAddress);
  const baseUrl = baseUrlFor(opts.bindAddress, port, opts.advertiseAddress);
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
      sockets.destroyAll();
      if (stack) (await stack.catch(() => undefined))?.close();
      await closed;
    },
  };
}
