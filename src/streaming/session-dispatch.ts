import type { Logger } from '../logging/logger';
import type { PodDialer } from './pod-dialer';
import type { StreamRequest } from './requests';
import type { AttachOptions, StreamSet } from './session';
import type { StreamTransports, Upgrade } from './transports';
import { httpError, webSocketPorts } from './upgrade-route';

type ExecRequest = Extract<StreamRequest, { kind: 'exec' }>;

/** Where sessions end up: the pod's network namespace, Docker exec and attach. */
export interface SessionBackends {
  dialPod(podSandboxId: string): Promise<PodDialer>;
  exec(containerId: string, opts: Omit<ExecRequest, 'kind' | 'containerId'>, streams: StreamSet): Promise<void>;
  attach(containerId: string, opts: AttachOptions, streams: StreamSet): Promise<void>;
}

export interface SessionDispatchDeps {
  transports: Pick<StreamTransports, 'remoteCommand' | 'portForward'>;
  backends: SessionBackends;
  log: Logger;
}

/** Runs the session a redeemed token stands for over the transport the client upgraded to. */
export class SessionDispatch {
  constructor(private readonly deps: SessionDispatchDeps) {}

  async serve(sr: StreamRequest, url: URL, up: Upgrade): Promise<void> {
    if (sr.kind === 'portforward') return this.portForward(sr, url, up);
    const streams = await this.deps.transports.remoteCommand(up, {
      stdin: sr.stdin,
      stdout: sr.stdout,
      stderr: sr.stderr,
      tty: sr.tty,
    });
    if (!streams) return;
    if (sr.kind === 'exec') {
      await this.deps.backends.exec(
        sr.containerId,
        { cmd: sr.cmd, tty: sr.tty, stdin: sr.stdin, stdout: sr.stdout, stderr: sr.stderr },
        streams,
      );
    } else {
      await this.deps.backends.attach(
        sr.containerId,
        { stdin: sr.stdin, stdout: sr.stdout, stderr: sr.stderr },
        streams,
      );
    }
  }

  private async portForward(sr: Extract<StreamRequest, { kind: 'portforward' }>, url: URL, up: Upgrade): Promise<void> {
    let ports = sr.ports;
    if (up.transport === 'websocket') {
      const wanted = webSocketPorts(url, sr.ports);
      if ('refusal' in wanted) return httpError(up.socket, wanted.refusal);
      ports = wanted.ports;
    }
    let dialer: PodDialer;
    try {
      dialer = await this.deps.backends.dialPod(sr.podSandboxId);
    } catch (err) {
      return httpError(up.socket, {
        status: 500,
        text: 'Internal Server Error',
        body: `${err instanceof Error ? err.message : String(err)}\n`,
      });
    }
    this.deps.log.info('port-forward session started', { podSandboxId: sr.podSandboxId, transport: up.transport });
    if (!(await this.deps.transports.portForward(up, ports, dialer, sr.podSandboxId))) dialer.close();
  }
}
