import type { DockerEngine } from '../docker/engine';
import type { Logger } from '../logging/logger';
import { podDialer } from './pod-dialer';
import { runAttachSession, runExecSession } from './session';
import { SessionDispatch } from './session-dispatch';
import { createStreamTransports } from './transports';

/** The transports (SPDY, WebSocket) and the Docker-backed sessions behind a redeemed token. */
export interface SessionStack {
  dispatch: SessionDispatch;
  close(): void;
}

/** server.ts loads this module on the first upgrade: it pulls in spdy-transport, ws and the session code. */
export function createSessionStack(docker: DockerEngine, log: Logger): SessionStack {
  const transports = createStreamTransports(log);
  const dispatch = new SessionDispatch({
    transports,
    backends: {
      dialPod: (id) => podDialer(docker, id, log),
      exec: (id, o, streams) => runExecSession(docker, id, o, streams, log),
      attach: (id, o, streams) => runAttachSession(docker, id, o, streams, log),
    },
    log,
  });
  return { dispatch, close: () => transports.close() };
}
