import type * as http from 'http';
import type { Duplex } from 'stream';
import { WebSocketServer } from 'ws';
import type { DockerApi } from '../docker/client';
import type { Logger } from '../logging/logger';
import { httpError } from './http-error';
import { podDialer } from './pod-dialer';
import { parsePort, spdyPortForward, wsPortForward } from './portforward';
import { SPDY_PORTFORWARD_PROTOCOLS, SPDY_REMOTECOMMAND_PROTOCOLS, WS_PORTFORWARD_PROTOCOLS, WS_REMOTECOMMAND_PROTOCOLS } from './remotecommand';
import type { StreamRequest } from './server';
import { runAttachSession, runExecSession, type StreamSet } from './session';
import { acceptSpdy, spdyRemoteCommand } from './spdy';
import { acceptWebSocket, pickProtocol, wsRemoteCommand } from './websocket';

/** Serves redeemed streaming requests over SPDY or WebSocket; server.ts loads it on the first upgrade. */
export interface SessionHandler {
  serve(sr: StreamRequest, req: http.IncomingMessage, url: URL, socket: Duplex, head: Buffer, isSpdy: boolean): Promise<void>;
  close(): void;
}

const errMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

export function createSessionHandler(docker: DockerApi, log: Logger): SessionHandler {
  const wssRemote = new WebSocketServer({ noServer: true, handleProtocols: pickProtocol(WS_REMOTECOMMAND_PROTOCOLS), perMessageDeflate: false });
  const wssPortForward = new WebSocketServer({ noServer: true, handleProtocols: pickProtocol(WS_PORTFORWARD_PROTOCOLS), perMessageDeflate: false });

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
        dialer = await podDialer(docker, sr.podSandboxId, log);
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
      await runExecSession(docker, sr.containerId, { cmd: sr.cmd, tty: sr.tty, stdin: sr.stdin, stdout: sr.stdout, stderr: sr.stderr }, streams, log);
    } else {
      await runAttachSession(docker, sr.containerId, { stdin: sr.stdin, stdout: sr.stdout, stderr: sr.stderr }, streams, log);
    }
  }

  return {
    serve,
    close() {
      wssRemote.close();
      wssPortForward.close();
    },
  };
}
