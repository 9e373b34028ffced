import type { Duplex } from 'stream';
import type * as Docker from '../docker/types';
import type { DockerEngine } from '../docker/engine';
import type { ExecExits } from '../docker/exec-exits';
import type { Logger } from '../logging/logger';
import { killProcessTree } from './process-kill';

export interface ExecOptions {
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** An exec Docker started, with its hijacked connection: stdin goes in, output (multiplexed unless tty) comes out. */
export interface RunningExec {
  execId: string;
  stream: Duplex;
}

/** Creates and starts a Docker exec with a hijacked connection. */
export async function startExec(
  docker: DockerEngine,
  containerId: string,
  o: ExecOptions,
  signal?: AbortSignal,
): Promise<RunningExec> {
  const execId = await docker.createExec(containerId, { ...o, ...(signal ? { signal } : {}) });
  const stream = await docker.startExec(execId, { stdin: o.stdin, tty: o.tty });
  return { execId, stream };
}

/**
 * How long after its stream ended an exec's exit event may take before Docker is asked instead.
 * It comes within milliseconds; a stream that lags longer (dockerd busy with a pod burst) costs
 * the inspects it would have cost anyway.
 */
export const EXIT_EVENT_GRACE_MS = 250;

/**
 * Exit code once Docker reports the exec finished: from its exit event where `exits` hears them,
 * else by inspect. The hijacked stream can end a moment before Docker records the exit, so the
 * inspect polls briefly.
 */
export async function waitForExit(
  docker: DockerEngine,
  execId: string,
  exits?: ExecExits,
  maxWaitMs = 10_000,
): Promise<number> {
  const heard = await exits?.wait(execId, EXIT_EVENT_GRACE_MS);
  if (heard !== undefined) return heard;
  return pollExit(() => docker.inspectExec(execId), maxWaitMs);
}

/**
 * Kills the exec'd process tree: Docker has no API for it and closing the
 * hijacked connection leaves the process running. The exec's Pid is a host pid.
 */
export async function killExecProcess(docker: DockerEngine, execId: string, log: Logger): Promise<void> {
  return killPolled(() => docker.inspectExec(execId), execId, log);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function pollExit(inspect: () => Promise<Docker.ExecInspectInfo>, maxWaitMs: number): Promise<number> {
  const deadline = Date.now() + maxWaitMs;
  for (let delay = 10; ; delay = Math.min(delay * 2, 250)) {
    const info = await inspect();
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    if (Date.now() > deadline) return info.ExitCode ?? -1;
    await sleep(delay);
  }
}

async function killPolled(inspect: () => Promise<Docker.ExecInspectInfo>, execId: string, log: Logger): Promise<void> {
  const deadline = Date.now() + 5000;
  for (let delay = 10; ; delay = Math.min(delay * 2, 250)) {
    let info: Docker.ExecInspectInfo;
    try {
      info = await inspect();
    } catch (err) {
      log.warn('cannot inspect exec to kill it', { execId, error: (err as Error).message });
      return;
    }
    if (!info.Running && info.ExitCode !== null) return; // already gone
    if (info.Running && info.Pid > 0) {
      const killed = await killProcessTree(info.Pid);
      log.info('killed exec process', { execId, pid: info.Pid, processes: killed.length });
      return;
    }
    if (Date.now() > deadline) {
      log.warn('exec has no pid to kill', { execId });
      return;
    }
    await sleep(delay);
  }
}
