import type { IncomingMessage } from 'http';
import type { Duplex } from 'stream';
import { WebSocketServer } from 'ws';
import type { Logger } from '../logging/logger';
import type { PodDialer } from './pod-dialer';
import { spdyPortForward, wsPortForward } from './portforward';
import {
  SPDY_PORTFORWARD_PROTOCOLS,
  SPDY_REMOTECOMMAND_PROTOCOLS,
  WS_PORTFORWARD_PROTOCOLS,
  WS_REMOTECOMMAND_PROTOCOLS,
} from './remotecommand';
import type { StreamSet } from './session';
import { acceptSpdy } from './spdy';
import { spdyRemoteCommand, type RemoteCommandWants } from './spdy-remotecommand';
import type { Transport } from './upgrade-route';
import { acceptWebSocket, pickProtocol, wsRemoteCommand } from './websocket';

/** An upgrade request on its way to a session. */
export interface Upgrade {
  req: IncomingMessage;
  socket: Duplex;
  head: Buffer;
  transport: Transport;
}

/** Completes an upgrade with SPDY/3.1 or WebSocket; each answers a failed protocol negotiation itself. */
export interface StreamTransports {
  /** The client's stdin/stdout/stderr/resize streams; undefined when the upgrade was refused. */
  remoteCommand(up: Upgrade, wants: RemoteCommandWants): Promise<StreamSet | undefined>;
  /** Starts relaying the client's port-forward streams through `dialer`; false when the upgrade was refused. */
  portForward(up: Upgrade, ports: number[], dialer: PodDialer, podSandboxId: string): Promise<boolean>;
  close(): void;
}

/** The SPDY and WebSocket transports (client-go's executors and the kubelet's WebSocket clients). */
export function createStreamTransports(log: Logger): StreamTransports {
  const wssRemote = new WebSocketServer({
    noServer: true,
    handleProtocols: pickProtocol(WS_REMOTECOMMAND_PROTOCOLS),
    perMessageDeflate: false,
  });
  const wssPortForward = new WebSocketServer({
    noServer: true,
    handleProtocols: pickProtocol(WS_PORTFORWARD_PROTOCOLS),
    perMessageDeflate: false,
  });
  return {
    async remoteCommand({ req, socket, head, transport }, wants) {
      if (transport === 'spdy') {
        const up = acceptSpdy(req, socket, head, SPDY_REMOTECOMMAND_PROTOCOLS);
        return up ? spdyRemoteCommand(up, wants) : undefined;
      }
      const ws = await acceptWebSocket(wssRemote, req, socket, head, WS_REMOTECOMMAND_PROTOCOLS);
      return ws ? wsRemoteCommand(ws, wants) : undefined;
    },
    async portForward({ req, socket, head, transport }, ports, dialer, podSandboxId) {
      if (transport === 'spdy') {
        const up = acceptSpdy(req, socket, head, SPDY_PORTFORWARD_PROTOCOLS);
        if (up) spdyPortForward(up, dialer, podSandboxId, log);
        return up !== undefined;
      }
      const ws = await acceptWebSocket(wssPortForward, req, socket, head, WS_PORTFORWARD_PROTOCOLS);
      if (ws) wsPortForward(ws, ports, dialer, podSandboxId, log);
      return ws !== undefined;
    },
    close() {
      wssRemote.close();
      wssPortForward.close();
    },
  };
}
