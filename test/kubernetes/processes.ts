/** The cluster's daemons: each a child process logging to its own file, stopped in reverse order. */
import { spawn, type ChildProcess } from 'child_process';
import { createWriteStream, promises as fsp } from 'fs';
import * as net from 'net';

export { freePort } from '../e2e/registry';

export interface Daemon {
  name: string;
  proc: ChildProcess;
  logFile: string;
  /** Whether it is still running (a kubelet that panicked is not). */
  alive(): boolean;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function exited(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
  });
}

/** Extra command-line flags a bench or test run passes in the environment variable `name`, space-separated. */
export function envFlags(name: string): string[] {
  return (process.env[name] ?? '').split(' ').filter(Boolean);
}

export function spawnDaemon(name: string, cmd: string, args: string[], logFile: string): Daemon {
  const log = createWriteStream(logFile, { flags: 'a' });
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
  proc.stdout?.pipe(log, { end: false });
  proc.stderr?.pipe(log, { end: false });
  return {
    name,
    proc,
    logFile,
    alive: () => proc.exitCode === null && proc.signalCode === null,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill(signal);
      const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited(proc);
      clearTimeout(killer);
    },
  };
}

/** Polls `ready` until it is true; fails with the daemon's last log lines when it exits or time runs out. */
export async function waitReady(d: Daemon, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!d.alive()) throw new Error(`${d.name} exited (${d.proc.exitCode ?? d.proc.signalCode}):\n${await tail(d)}`);
    if (await ready().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${d.name} not ready within ${timeoutMs / 1000} s:\n${await tail(d)}`);
}

export async function tail(d: Pick<Daemon, 'logFile'>, lines = 30): Promise<string> {
  const text = await fsp.readFile(d.logFile, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** True once something accepts TCP connections on 127.0.0.1:port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
