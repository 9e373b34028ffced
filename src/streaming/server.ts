import * as http from 'http';
import type { AddressInfo } from 'net';
import type { Duplex } from 'stream';
import { WebSocketServer } from 'ws';
import type { DockerEngine } from '../docker/engine';
import type { Logger } from '../logging/logger';
import { podDialer } from './pod-dialer';
import { parsePort, spdyPortForward, wsPortForward } from './portforward';
import { SPDY_PORTFORWARD_PROTOCOLS, SPDY_REMOTECOMMAND_PROTOCOLS, WS_PORTFORWARD_PROTOCOLS, WS_REMOTECOMMAND_PROTOCOLS } from './remotecommand';
import { runAttachSession, runExecSession, type StreamSet } from './session';
import { acceptSpdy, spdyRemoteCommand } from './spdy';
import { createTokenStore } from './tokens';
import { acceptWebSocket, pickProtocol, wsRemoteCommand } from './websocket';

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

function httpError(socket: Duplex, code: number, text: string, body: string): void {
  socket.end(`HTTP/1.1 ${code} ${text}\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

export async function startStreamingServer(opts: StreamingServerOptions): Promise<StreamingServer> {
  const log = opts.logger.child({ component: 'streaming' });
  const tokens = createTokenStore<StreamRequest>({ ttlMs: opts.tokenTtlMs });
  const sockets = new Set<Duplex>();
  const server = http.createServer((req, res) => {
    // plain requests are never served: a token is only redeemed by an upgrade
    res.writeHead(400, { 'Content-Type': 'text/plain' }).end('streaming endpoints need an SPDY/3.1 or WebSocket upgrade\n');
  });
  const wssRemote = new WebSocketServer({ noServer: true, handleProtocols: pickProtocol(WS_REMOTECOMMAND_PROTOCOLS), perMessageDeflate: false });
  const wssPortForward = new WebSocketServer({ noServer: true, handleProtocols: pickProtocol(WS_PORTFORWARD_PROTOCOLS), perMessageDeflate: false });

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
    void serve(sr, req, url, socket, head, isSpdy).catch((err) => {
      log.warn('streaming session failed', { kind: sr.kind, error: errMessage(err), ...ids(sr) });
      socket.destroy();
    });
  });

  function ids(sr: StreamRequest): Record<string, string> {
    return sr.kind === 'portforward' ? { podSandboxId: sr.podSandboxId } : { containerId: sr.containerId };
  }

  async function serve(sr: StreamRequest, req: http.IncomingMessage, url: URL, socket: Duplex, head: Buffer, isSpdy: boolean): Promise<void> {
    if (sr.kind === 'portforward') {
      let ports = sr.ports;
      if (!isSpdy) {
        const q = [...url.searchParams.getAll('port'), ...url.searchParams.getAll('ports').flatMap((v) => v.split(','))];
        if (q.length) {
          const parsed = q.map((v) => parsePort(v));
          if (parsed.some((p) => p === undefined)) return httpError(socket, 400, 'Bad Request', `invalid port in ${q.join(',')}\n`);
          ports = parsed as number[];
        }
        if (!ports.length) return httpError(socket, 400, 'Bad Request', 'no ports to forward\n');
      }
      let dialer;
      try {
        dialer = await podDialer(opts.docker, sr.podSandboxId, log);
      } catch (err) {
        return httpError(socket, 500, 'Internal Server Error', `${errMessage(err)}\n`);
      }
      log.info('port-forward session started', { podSandboxId: sr.podSandboxId, transport: isSpdy ? 'spdy' : 'websocket' });
      if (isSpdy) {
        const up = acceptSpdy(req, socket, head, SPDY_PORTFORWARD_PROTOCOLS);
        if (!up) return dialer.close();
        spdyPortForward(up, dialer, sr.podSandboxId, log);
      } else {
        const ws = await acceptWebSocket(wssPortForward, req, socket, head, WS_PORTFORWARD_PROTOCOLS);
        if (!ws) return dialer.close();
        wsPortForward(ws, ports, dialer, sr.podSandboxId, log);
      }
      return;
    }
    const wants = { stdin: sr.stdin, stdout: sr.stdout, stderr: sr.stderr, tty: sr.tty };
    let streams: StreamSet;
    if (isSpdy) {
      const up = acceptSpdy(req, socket, head, SPDY_REMOTECOMMAND_PROTOCOLS);
      if (!up) return;
      streams = await spdyRemoteCommand(up, wants);
    } else {
      const ws = await acceptWebSocket(wssRemote, req, socket, head, WS_REMOTECOMMAND_PROTOCOLS);
      if (!ws) return;
      streams = wsRemoteCommand(ws, wants);
    }
    if (sr.kind === 'exec') {
      await runExecSession(opts.docker, sr.containerId, { cmd: sr.cmd, tty: sr.tty, stdin: sr.stdin, stdout: sr.stdout, stderr: sr.stderr }, streams, log);
    } else {
      await runAttachSession(opts.docker, sr.containerId, { stdin: sr.stdin, stdout: sr.stdout, stderr: sr.stderr }, streams, log);
    }
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
      wssRemote.close();
      wssPortForward.close();
      await closed;
    },
  };
}
