import type { Readable, Writable } from 'stream';
import type { DockerEngine } from '../docker/engine';
import type { Logger } from '../logging/logger';
import { copyDemuxed, copyRaw } from './demux';
import { killExecProcess, startExec, waitForExit, type ExecOptions } from './docker-exec';
import type { SessionOutcome, TerminalSize } from './remotecommand';

/**
 * A client's side of one exec/attach session, whatever the transport (SPDY
 * streams or WebSocket channels). Streams the client did not ask for are null.
 */
export interface StreamSet {
  readonly protocol: string;
  readonly stdin: Readable | null;
  readonly stdout: Writable | null;
  readonly stderr: Writable | null;
  /** Registers the resize listener; the last size received before registration is replayed. */
  onResize(listener: (size: TerminalSize) => void): void;
  /** Aborted when the client goes away before `finish`. */
  readonly gone: AbortSignal;
  /** Flushes output, reports the outcome on the error stream/channel, closes the session. */
  finish(outcome: SessionOutcome): Promise<void>;
}

const errMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** Feeds client stdin into Docker's hijacked connection; EOF half-closes it, which closes the process's stdin. */
function pipeStdin(stdin: Readable | null, dst: Writable): void {
  if (!stdin) return;
  stdin.pipe(dst, { end: false });
  stdin.once('end', () => {
    if (!dst.destroyed) dst.end();
  });
}

/** Docker rejects a resize for a process that has not started yet; a few retries cover that race. */
async function resizeWithRetry(resize: () => Promise<unknown>): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await resize();
      return;
    } catch (err) {
      if (attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
    }
  }
}

export async function runExecSession(
  docker: DockerEngine,
  containerId: string,
  opts: ExecOptions,
  streams: StreamSet,
  log: Logger,
): Promise<void> {
  const o: ExecOptions = {
    cmd: opts.cmd,
    tty: opts.tty,
    stdin: opts.stdin && streams.stdin !== null,
    stdout: opts.stdout && streams.stdout !== null,
    stderr: opts.stderr && !opts.tty && streams.stderr !== null,
  };
  let started;
  try {
    started = await startExec(docker, containerId, o);
  } catch (err) {
    log.warn('exec failed to start', { containerId, error: errMessage(err) });
    await streams.finish({ kind: 'error', message: `exec failed: ${errMessage(err)}` });
    return;
  }
  const { execId, stream } = started;
  log.info('exec session started', { containerId, execId, tty: o.tty, stdin: o.stdin, protocol: streams.protocol });
  if (o.tty) {
    streams.onResize((s) => {
      resizeWithRetry(() => docker.resizeExec(execId, s)).catch((err) =>
        log.debug('exec resize failed', { containerId, execId, error: errMessage(err) }),
      );
    });
  }
  pipeStdin(o.stdin ? streams.stdin : null, stream);
  stream.on('error', () => undefined); // surfaced as the copy ending; the exit code tells the rest
  const onGone = (): void => {
    log.info('streaming client went away; killing exec', { containerId, execId });
    void killExecProcess(docker, execId, log).finally(() => stream.destroy());
  };
  streams.gone.addEventListener('abort', onGone, { once: true });
  try {
    await (o.tty ? copyRaw(stream, streams.stdout) : copyDemuxed(stream, streams.stdout, streams.stderr));
  } catch (err) {
    log.debug('exec stream ended with error', { containerId, execId, error: errMessage(err) });
  }
  streams.gone.removeEventListener('abort', onGone);
  if (streams.gone.aborted) return;
  let outcome: SessionOutcome;
  try {
    outcome = { kind: 'exit', exitCode: await waitForExit(docker, execId), cmd: o.cmd };
  } catch (err) {
    outcome = { kind: 'error', message: `cannot read exit code: ${errMessage(err)}` };
  }
  log.info('exec session finished', {
    containerId,
    execId,
    ...(outcome.kind === 'exit' ? { exitCode: outcome.exitCode } : {}),
  });
  await streams.finish(outcome);
}

export interface AttachOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export async function runAttachSession(
  docker: DockerEngine,
  containerId: string,
  opts: AttachOptions,
  streams: StreamSet,
  log: Logger,
): Promise<void> {
  let stream: Readable & Writable;
  let tty: boolean;
  let withStdin: boolean;
  try {
    const info = await docker.inspectContainer(containerId);
    tty = info.Config.Tty;
    // Docker only wires stdin for containers created with OpenStdin
    withStdin = opts.stdin && info.Config.OpenStdin && streams.stdin !== null;
    stream = await docker.attachContainer(containerId, {
      stdin: withStdin,
      stdout: opts.stdout && streams.stdout !== null,
      stderr: opts.stderr && streams.stderr !== null,
    });
  } catch (err) {
    log.warn('attach failed', { containerId, error: errMessage(err) });
    await streams.finish({ kind: 'error', message: `attach failed: ${errMessage(err)}` });
    return;
  }
  const duplex = stream;
  log.info('attach session started', { containerId, tty, stdin: withStdin, protocol: streams.protocol });
  if (tty) {
    streams.onResize((s) => {
      resizeWithRetry(() => docker.resizeContainer(containerId, s)).catch((err) =>
        log.debug('container resize failed', { containerId, error: errMessage(err) }),
      );
    });
  }
  pipeStdin(withStdin ? streams.stdin : null, duplex);
  duplex.on('error', () => undefined);
  // detaching leaves the container running: only our connection goes
  const onGone = (): void => {
    duplex.destroy();
  };
  streams.gone.addEventListener('abort', onGone, { once: true });
  try {
    await (tty ? copyRaw(duplex, streams.stdout) : copyDemuxed(duplex, streams.stdout, streams.stderr));
  } catch (err) {
    log.debug('attach stream ended with error', { containerId, error: errMessage(err) });
  }
  streams.gone.removeEventListener('abort', onGone);
  if (streams.gone.aborted) {
    log.info('attach client went away', { containerId });
    return;
  }
  log.info('attach session finished', { containerId });
  await streams.finish({ kind: 'exit', exitCode: 0 });
}
