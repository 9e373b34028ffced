import { availableParallelism } from 'os';
import { DomainError, invalidArgument } from '../errors';
import { fromDockerError } from '../docker/errors';
import { MAX_MESSAGE_BYTES } from '../server/proto';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { demuxInto } from '../docker/demux';
import { killExecProcess, startExec, waitForExit } from '../streaming/docker-exec';
import { checkId } from '../cri/validation';
import type { ExecDeps } from '../service-deps';
import { mustFindRunningContainer } from '../container/lookup';
import { ExecAdmission, type AdmissionLimits } from '../streaming/exec-admission';

/** stdout + stderr of ExecSync must fit in one 16 MiB CRI message; keep room for the envelope. */
export const EXEC_SYNC_OUTPUT_LIMIT = MAX_MESSAGE_BYTES - 64 * 1024;

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
/**
 * Docker execs let in at once (see ExecAdmission). Two per core kept a 110-pod burst's probes
 * under their 1 s timeout on two cores; 30 probes at once on a quiet node ran fastest all together.
 */
export const EXEC_LIMITS: AdmissionLimits = {
  wide: 16 * availableParallelism(),
  narrow: Math.max(2, 2 * availableParallelism()),
  narrowForMs: 10_000,
  holdMs: 1000,
};

export function execSync(deps: ExecDeps, admission = new ExecAdmission(EXEC_LIMITS)) {
  return async (req: RuntimeReq<'ExecSync'>, ctx: CallContext): Promise<RuntimeRes<'ExecSync'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.cmd?.length) throw invalidArgument('cmd must not be empty');
    const timeoutSec = Number(req.timeout || '0');
    if (!Number.isFinite(timeoutSec) || timeoutSec < 0) throw invalidArgument(`invalid timeout ${req.timeout}`);
    const info = await mustFindRunningContainer(deps, id, ctx);
    const containerId = info.Id;
    const release = await admission.enter(ctx.signal);
    try {
      return await run(deps, req, ctx, containerId, timeoutSec);
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'deadline-exceeded') admission.overloaded();
      throw err;
    } finally {
      release();
    }
  };
}

async function run(
  deps: ExecDeps,
  req: RuntimeReq<'ExecSync'>,
  ctx: CallContext,
  containerId: string,
  timeoutSec: number,
): Promise<RuntimeRes<'ExecSync'>> {
  let started;
  try {
    started = await startExec(
      deps.docker,
      containerId,
      { cmd: req.cmd, tty: false, stdin: false, stdout: true, stderr: true },
      ctx.signal,
    );
  } catch (err) {
    throw fromDockerError(err, `exec in container ${containerId}`);
  }
  const { execId, stream } = started;
  const budget = { left: EXEC_SYNC_OUTPUT_LIMIT };
  const stdout = cappedSink(budget);
  const stderr = cappedSink(budget);
  const ended = new Promise<'done'>((resolve) => {
    demuxInto(stream, stdout.sink, stderr.sink);
    stream.once('end', () => resolve('done'));
    stream.once('close', () => resolve('done'));
    stream.once('error', () => resolve('done'));
  });
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stopped = new Promise<'timeout' | 'cancelled'>((resolve) => {
    // Node runs due timers before the I/O that came in meanwhile: when the event loop was held up
    // (a pod burst on a busy node), the command's end may be waiting behind its timer. Deciding one
    // turn later lets an end that had already come count, as a runtime with threads would see it.
    if (timeoutSec > 0) timer = setTimeout(() => setImmediate(() => resolve('timeout')), timeoutSec * 1000);
    onAbort = () => resolve('cancelled');
    if (ctx.signal.aborted) onAbort();
    else ctx.signal.addEventListener('abort', onAbort, { once: true });
  });
  const outcome = await Promise.race([ended, stopped]);
  clearTimeout(timer);
  if (onAbort) ctx.signal.removeEventListener('abort', onAbort);
  if (outcome !== 'done') {
    // Docker cannot stop an exec; without this the process runs on after we give up
    await killExecProcess(deps.docker, execId, ctx.log);
    stream.destroy();
    const what = `exec ${JSON.stringify(req.cmd.join(' ').slice(0, 100))} in container ${containerId}`;
    if (outcome === 'timeout')
      throw new DomainError('deadline-exceeded', `${what} timed out after ${timeoutSec}s; the process was killed`);
    throw new DomainError('cancelled', `${what} cancelled; the process was killed`);
  }
  let exitCode: number;
  try {
    exitCode = await waitForExit(deps.docker, execId, deps.execExits);
  } catch (err) {
    throw fromDockerError(err, `inspect exec in container ${containerId}`);
  }
  if (budget.left <= 0) ctx.log.warn('ExecSync output truncated', { containerId, limitBytes: EXEC_SYNC_OUTPUT_LIMIT });
  return { stdout: stdout.bytes(), stderr: stderr.bytes(), exit_code: exitCode };
}
