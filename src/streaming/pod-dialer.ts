import { spawn, type ChildProcess } from 'child_process';
import { promises as fsp } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import type { DockerEngine } from '../docker/engine';
import type { Logger } from '../logging/logger';
import { relayInvocation } from './relay';

/** Opens TCP connections to 127.0.0.1:<port> as seen from inside a pod. */
export interface PodDialer {
  dial(port: number): Promise<net.Socket>;
  close(): void;
}

/** Connects to a pod port through the relay's Unix socket. */
function dialRelay(sockPath: string, port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ path: sockPath, allowHalfOpen: true });
    let buf = Buffer.alloc(0);
    const fail = (err: Error): void => {
      s.destroy();
      reject(err);
    };
    s.once('error', fail);
    s.once('connect', () => s.write(Buffer.from([port >> 8, port & 0xff])));
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      if (buf[0] === 0) {
        s.off('data', onData);
        s.off('end', onEnd);
        s.off('error', fail);
        s.pause();
        if (buf.length > 1) s.unshift(buf.subarray(1));
        resolve(s);
      }
    };
    const onEnd = (): void => {
      const msg = buf.length > 1 ? buf.subarray(1).toString('utf8') : 'relay closed the connection';
      fail(new Error(msg));
    };
    s.on('data', onData);
    s.once('end', onEnd);
  });
}

function directDialer(): PodDialer {
  return {
    dial: (port) =>
      new Promise((resolve, reject) => {
        const s = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
        s.once('connect', () => {
          s.off('error', reject);
          resolve(s);
        });
        s.once('error', reject);
      }),
    close: () => undefined,
  };
}

/** Starts one relay per port-forward session, lazily on the first connection. */
function netnsDialer(netnsPid: number, podSandboxId: string, log: Logger): PodDialer {
  let relay: Promise<{ proc: ChildProcess; sockPath: string; dir: string }> | undefined;
  let closed = false;
  const start = async (): Promise<{ proc: ChildProcess; sockPath: string; dir: string }> => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-pf-'));
    const sockPath = path.join(dir, 'relay.sock');
    const cmd = relayInvocation(sockPath);
    const proc = spawn('nsenter', [`--net=/proc/${netnsPid}/ns/net`, '--', cmd.file, ...cmd.args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    proc.once('exit', (code, sig) => {
      log.debug('port-forward relay exited', { podSandboxId, code, signal: sig });
      void fsp.rm(dir, { recursive: true, force: true });
    });
    await new Promise<void>((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (code) => reject(new Error(`port-forward relay exited (${code}): ${stderr.trim()}`)));
      proc.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) resolve();
      });
    });
    log.info('port-forward relay started in pod network namespace', { podSandboxId, relayPid: proc.pid, netnsPid });
    return { proc, sockPath, dir };
  };
  return {
    async dial(port) {
      if (closed) throw new Error('port-forward session closed');
      relay ??= start();
      const r = await relay;
      return dialRelay(r.sockPath, port);
    },
    close() {
      closed = true;
      void relay?.then(
        (r) => {
          r.proc.stdin?.end(); // the relay exits on stdin EOF; SIGKILL if it lingers
          const t = setTimeout(() => r.proc.kill('SIGKILL'), 2000);
          t.unref();
          r.proc.once('exit', () => clearTimeout(t));
        },
        () => undefined,
      );
    },
  };
}

/**
 * A dialer for the sandbox (pause container) `podSandboxId`: host-network
 * pods are reached on the host's loopback, others through a relay in
 * /proc/<pause pid>/ns/net.
 */
export async function podDialer(docker: DockerEngine, podSandboxId: string, log: Logger): Promise<PodDialer> {
  const info = await docker.inspectContainer(podSandboxId);
  if (!info.State.Running || !info.State.Pid) throw new Error(`pod sandbox ${podSandboxId} is not running`);
  if (info.HostConfig.NetworkMode === 'host') return directDialer();
  return netnsDialer(info.State.Pid, podSandboxId, log);
}
