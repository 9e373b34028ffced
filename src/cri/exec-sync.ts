import { status as grpcStatus } from '@grpc/grpc-js';
import { startExec } from '../docker/exec';
import { CriError, failedPrecondition, invalidArgument, toCriError } from '../server/errors';
import { MAX_MESSAGE_BYTES } from '../server/proto';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { mustFindContainer } from './container-lookup';
import { checkId } from './validation';

/** Both outputs together must fit the 16 MiB CRI message; keep room for the envelope. */
export const EXEC_SYNC_OUTPUT_LIMIT = MAX_MESSAGE_BYTES - 64 * 1024;

/** Collects output up to a shared byte budget, then keeps draining and drops the rest. */
export class CappedOutput {
  private chunks: Buffer[] = [];
  constructor(private readonly budget: { left: number }) {}
  write(chunk: Buffer): void {
    if (this.budget.left <= 0) return;
    const part = chunk.length > this.budget.left ? chunk.subarray(0, this.budget.left) : chunk;
    this.budget.left -= part.length;
    this.chunks.push(part);
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

export function execSync(deps: ServiceDeps) {
  return async (req: RuntimeReq<'ExecSync'>, ctx: CallContext): Promise<RuntimeRes<'ExecSync'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.cmd?.length) throw invalidArgument('cmd must not be empty');
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id });
    if (!info.State.Running) throw failedPrecondition(`container ${info.Id} is not running`);
    const timeoutSec = Number(req.timeout ?? '0');

    let session;
    try {
      session = await startExec(deps.docker, info.Id, { cmd: req.cmd, tty: false, stdin: false, stdout: true, stderr: true });
    } catch (err) {
      throw toCriError(err, `ExecSync in container ${info.Id}`);
    }
    const budget = { left: EXEC_SYNC_OUTPUT_LIMIT };
    const stdout = new CappedOutput(budget);
    const stderr = new CappedOutput(budget);
    const s = session;
    const finished = new Promise<void>((resolve) => {
      const out = { write: (c: Buffer) => (stdout.write(c), true) } as unknown as NodeJS.WritableStream;
      const err = { write: (c: Buffer) => (stderr.write(c), true) } as unknown as NodeJS.WritableStream;
      deps.docker.modem.demuxStream(s.stream, out, err);
      s.stream.on('end', resolve);
      s.stream.on('close', resolve);
      s.stream.on('error', () => resolve());
    });
    let timer: NodeJS.Timeout | undefined;
    const stop = new Promise<'timeout' | 'aborted'>((resolve) => {
      if (timeoutSec > 0) timer = setTimeout(() => resolve('timeout'), timeoutSec * 1000);
      ctx.signal.addEventListener('abort', () => resolve('aborted'), { once: true });
    });
    const outcome = await Promise.race([finished.then(() => 'done' as const), stop]);
    if (timer) clearTimeout(timer);
    if (outcome !== 'done') {
      // Docker cannot cancel an exec: kill the process itself so nothing keeps running
      await s.kill();
      s.stream.destroy();
      if (outcome === 'timeout') {
        throw new CriError(grpcStatus.DEADLINE_EXCEEDED, `ExecSync ${JSON.stringify(req.cmd.join(' ').slice(0, 100))} in container ${info.Id} timed out after ${timeoutSec}s; the process was killed`);
      }
      throw new CriError(grpcStatus.CANCELLED, `ExecSync in container ${info.Id} cancelled; the process was killed`);
    }
    const exitCode = await s.exitCode();
    return { stdout: stdout.bytes(), stderr: stderr.bytes(), exit_code: exitCode };
  };
}
