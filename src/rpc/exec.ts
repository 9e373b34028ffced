import type * as Docker from '../docker/types';
import type { DockerApi } from '../docker/client';
import type { Logger } from '../logging/logger';
import { DomainError, failedPrecondition, invalidArgument, notFound } from '../errors';
import { fromDockerError, isDockerNotFound } from '../docker/errors';
import { MAX_MESSAGE_BYTES } from '../server/proto';
import type { CallContext, RuntimeImpl, RuntimeReq, RuntimeRes } from '../server/rpc';
import { killExec, startDockerExec, waitExecExit } from '../streaming/docker-exec';
import type { StreamingServer } from '../streaming/server';
import { TYPE_CONTAINER, TYPE_LABEL, TYPE_SANDBOX } from '../labels';
import { checkId } from '../cri/validation';

/** stdout + stderr of ExecSync must fit in one 16 MiB CRI message; keep room for the envelope. */
export const EXEC_SYNC_OUTPUT_LIMIT = MAX_MESSAGE_BYTES - 64 * 1024;

export interface ExecDeps {
  docker: DockerApi;
  streaming: StreamingServer;
  logger: Logger;
}

/** Collects output up to a budget shared by stdout and stderr, then drops (but keeps draining). */
function cappedSink(budget: { left: number }): { sink: NodeJS.WritableStream; bytes(): Buffer } {
  const chunks: Buffer[] = [];
  const sink = {
    write(chunk: Buffer): boolean {
      if (budget.left > 0) {
        const part = chunk.length > budget.left ? chunk.subarray(0, budget.left) : chunk;
        budget.left -= part.length;
        chunks.push(Buffer.from(part));
      }
      return true;
    },
  } as unknown as NodeJS.WritableStream;
  return { sink, bytes: () => Buffer.concat(chunks) };
}

async function runningContainer(docker: DockerApi, id: string, ctx: CallContext): Promise<Docker.ContainerInspectInfo> {
  let info: Docker.ContainerInspectInfo;
  try {
    info = await docker.getContainer(id).inspect();
  } catch (err) {
    if (isDockerNotFound(err)) throw notFound(`container ${id}`);
    throw fromDockerError(err, `inspect container ${id}`);
  }
  // like ContainerStatus: a Docker container crishim does not manage (a plain `docker run`, a pause container) is not a CRI container
  if (info.Config.Labels?.[TYPE_LABEL] !== TYPE_CONTAINER) throw notFound(`container ${id}`);
  ctx.annotate({ containerId: info.Id });
  if (!info.State.Running) throw failedPrecondition(`container ${info.Id} is not running`);
  return info;
}

function checkStreams(req: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean }): void {
  if (!req.stdin && !req.stdout && !req.stderr) throw invalidArgument('one of stdin, stdout or stderr must be set');
  if (req.tty && req.stderr) throw invalidArgument('tty and stderr cannot both be set: a terminal merges stderr into stdout');
}

function execSync(deps: ExecDeps) {
  return async (req: RuntimeReq<'ExecSync'>, ctx: CallContext): Promise<RuntimeRes<'ExecSync'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.cmd?.length) throw invalidArgument('cmd must not be empty');
    const timeoutSec = Number(req.timeout || '0');
    if (!Number.isFinite(timeoutSec) || timeoutSec < 0) throw invalidArgument(`invalid timeout ${req.timeout}`);
    const info = await runningContainer(deps.docker, id, ctx);
    const containerId = info.Id;
    let started;
    try {
      started = await startDockerExec(deps.docker, containerId, { cmd: req.cmd, tty: false, stdin: false, stdout: true, stderr: true }, ctx.signal);
    } catch (err) {
      throw fromDockerError(err, `exec in container ${containerId}`);
    }
    const { exec, stream } = started;
    const budget = { left: EXEC_SYNC_OUTPUT_LIMIT };
    const stdout = cappedSink(budget);
    const stderr = cappedSink(budget);
    const ended = new Promise<'done'>((resolve) => {
      deps.docker.modem.demuxStream(stream, stdout.sink, stderr.sink);
      stream.once('end', () => resolve('done'));
      stream.once('close', () => resolve('done'));
      stream.once('error', () => resolve('done'));
    });
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<'timeout' | 'cancelled'>((resolve) => {
      if (timeoutSec > 0) timer = setTimeout(() => resolve('timeout'), timeoutSec * 1000);
      onAbort = () => resolve('cancelled');
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
    const outcome = await Promise.race([ended, stopped]);
    clearTimeout(timer);
    if (onAbort) ctx.signal.removeEventListener('abort', onAbort);
    if (outcome !== 'done') {
      // Docker cannot stop an exec; without this the process runs on after we give up
      await killExec(exec, ctx.log);
      stream.destroy();
      const what = `exec ${JSON.stringify(req.cmd.join(' ').slice(0, 100))} in container ${containerId}`;
      if (outcome === 'timeout') throw new DomainError('deadline-exceeded', `${what} timed out after ${timeoutSec}s; the process was killed`);
      throw new DomainError('cancelled', `${what} cancelled; the process was killed`);
    }
    let exitCode: number;
    try {
      exitCode = await waitExecExit(exec);
    } catch (err) {
      throw fromDockerError(err, `inspect exec in container ${containerId}`);
    }
    if (budget.left <= 0) ctx.log.warn('ExecSync output truncated', { containerId, limitBytes: EXEC_SYNC_OUTPUT_LIMIT });
    return { stdout: stdout.bytes(), stderr: stderr.bytes(), exit_code: exitCode };
  };
}

function execRpc(deps: ExecDeps) {
  return async (req: RuntimeReq<'Exec'>, ctx: CallContext): Promise<RuntimeRes<'Exec'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.cmd?.length) throw invalidArgument('cmd must not be empty');
    checkStreams(req);
    const info = await runningContainer(deps.docker, id, ctx);
    const url = deps.streaming.issueUrl({
      kind: 'exec',
      containerId: info.Id,
      cmd: req.cmd,
      tty: req.tty,
      stdin: req.stdin,
      stdout: req.stdout,
      stderr: req.stderr,
    });
    return { url };
  };
}

function attachRpc(deps: ExecDeps) {
  return async (req: RuntimeReq<'Attach'>, ctx: CallContext): Promise<RuntimeRes<'Attach'>> => {
    const id = checkId('container_id', req.container_id);
    checkStreams(req);
    const info = await runningContainer(deps.docker, id, ctx);
    if (req.stdin && !info.Config.OpenStdin) {
      throw failedPrecondition(`container ${info.Id} was not created with stdin open; cannot attach stdin`);
    }
    const url = deps.streaming.issueUrl({ kind: 'attach', containerId: info.Id, tty: req.tty, stdin: req.stdin, stdout: req.stdout, stderr: req.stderr });
    return { url };
  };
}

function portForwardRpc(deps: ExecDeps) {
  return async (req: RuntimeReq<'PortForward'>, ctx: CallContext): Promise<RuntimeRes<'PortForward'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    for (const p of req.port ?? []) {
      if (!Number.isInteger(p) || p < 1 || p > 65535) throw invalidArgument(`invalid port ${p}`);
    }
    let info: Docker.ContainerInspectInfo;
    try {
      info = await deps.docker.getContainer(id).inspect();
    } catch (err) {
      if (isDockerNotFound(err)) throw notFound(`pod sandbox ${id}`);
      throw fromDockerError(err, `inspect pod sandbox ${id}`);
    }
    // a container id (or any other Docker container) is not a pod: forwarding into it would bypass the pod's identity
    if (info.Config.Labels?.[TYPE_LABEL] !== TYPE_SANDBOX) throw notFound(`pod sandbox ${id}`);
    ctx.annotate({ podSandboxId: info.Id });
    if (!info.State.Running) throw failedPrecondition(`pod sandbox ${info.Id} is not running`);
    return { url: deps.streaming.issueUrl({ kind: 'portforward', podSandboxId: info.Id, ports: req.port ?? [] }) };
  };
}

/** ExecSync, Exec, Attach and PortForward over Docker and the streaming server. */
export function execHandlers(deps: ExecDeps): Required<Pick<RuntimeImpl, 'ExecSync' | 'Exec' | 'Attach' | 'PortForward'>> {
  return {
    ExecSync: execSync(deps),
    Exec: execRpc(deps),
    Attach: attachRpc(deps),
    PortForward: portForwardRpc(deps),
  };
}
