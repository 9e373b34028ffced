import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../logging/logger';
import { DomainError, cancelled, deadlineExceeded, unimplemented } from '../errors';
import { fromDockerError } from '../docker/errors';
import { grpcStatusOf } from './errors';
import type { CallContext, StreamImpl, UnaryImpl } from './rpc';

/** What every RPC's handler shares: where it logs and who hears that it finished. */
export interface HandlerOptions {
  logger: Logger;
  /** Called after every RPC; the metrics layer hooks in here. */
  onCallDone?: (method: string, code: grpc.status, seconds: number) => void;
}

/**
 * RPCs the kubelet calls over and over, logged at debug: the reads it polls, and ExecSync, which
 * its exec probes call for every such pod every few seconds (a line per probe at info would be the
 * bulk of the journal). A failed call is still logged at warn.
 */
const POLLED =
  /^(Version|Status|List|Stream|.*Status$|.*Stats$|ImageFsInfo|RuntimeConfig|GetContainerEvents|ListMetricDescriptors|ExecSync$)/;

/** Longest id or reference copied from a request into the log (requests can carry anything). */
const MAX_LOGGED_FIELD = 128;

/**
 * The pod/container id and image reference a request names, so that the
 * summary line carries them even when the call fails before any lookup
 * (NOT_FOUND, validation). Handlers replace them with full ids once resolved.
 */
export function requestFields(req: unknown): Record<string, string> {
  const r = (req ?? {}) as { pod_sandbox_id?: unknown; container_id?: unknown; image?: { image?: unknown } | null };
  const out: Record<string, string> = {};
  const put = (key: string, value: unknown): void => {
    if (typeof value === 'string' && value !== '') out[key] = value.slice(0, MAX_LOGGED_FIELD);
  };
  put('podSandboxId', r.pod_sandbox_id);
  put('containerId', r.container_id);
  if (r.image && typeof r.image === 'object') put('image', r.image.image);
  return out;
}

type AnyCall = grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>;

/**
 * One call's context. Its abort signal, with the deadline timer and the cancel listener behind it,
 * is made when a handler first asks for it: only handlers that wait on Docker or a process do,
 * and the rest (every call the kubelet polls) would pay for the three on each call. A handler
 * that never took the signal cannot be stopped by it either; grpc-js itself answers a call past
 * its deadline with DEADLINE_EXCEEDED.
 *
 * A class, not an object literal with getters: V8 gives each literal's own accessors a pair
 * allocated in the old space, and through it every scavenge kept the call (the grpc-js call, its
 * HTTP/2 stream, the context) alive until the next full GC. That promoted ~5 KB per call, most of
 * what drove crishim's full GCs under the kubelet (docs/how-it-works.md, "Memory and the V8
 * settings"). A class keeps its accessors once, on the prototype.
 */
class Context implements CallContext {
  private ac: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private onCancel: (() => void) | undefined;
  private disposed = false;
  // made on first use: most calls (every List the kubelet polls) never log anything of their own
  private logger: Logger | undefined;

  constructor(
    readonly method: string,
    private readonly call: AnyCall,
    private readonly root: Logger,
    private readonly fields: Record<string, string>,
  ) {}

  get signal(): AbortSignal {
    if (this.ac) return this.ac.signal;
    const c = (this.ac = new AbortController());
    // asked for only after the call was answered: nothing left to cancel it, as before when dispose cleared it
    if (this.disposed) return c.signal;
    const { call, method } = this;
    const onCancel = (this.onCancel = (): void => c.abort(cancelled(`${method} cancelled by the client`)));
    if (call.cancelled) onCancel();
    else call.on('cancelled', onCancel);
    const deadline = call.getDeadline();
    // a grpc Deadline is absolute (Date or epoch ms); Infinity means none
    const ms = (deadline instanceof Date ? deadline.getTime() : Number(deadline)) - Date.now();
    if (Number.isFinite(ms) && !c.signal.aborted) {
      // setTimeout cannot wait longer than 2^31-1 ms
      this.timer = setTimeout(
        () => c.abort(deadlineExceeded(`${method} deadline exceeded`)),
        Math.min(Math.max(ms, 0), 2 ** 31 - 1),
      );
    }
    return c.signal;
  }

  get log(): Logger {
    return (this.logger ??= this.root.child({ rpc: this.method, ...this.fields }));
  }

  set log(value: Logger) {
    this.logger = value;
  }

  annotate(more: Record<string, string>): void {
    Object.assign(this.fields, more);
    this.logger = undefined;
  }

  /** Why the signal aborted, if it did. */
  abortReason(): unknown {
    return this.ac?.signal.aborted ? this.ac.signal.reason : undefined;
  }

  /** The call is answered: its timer and listener go. */
  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.onCancel) this.call.removeListener('cancelled', this.onCancel);
  }
}

/** A handler's error, or why its call was aborted when the error is only the abort's echo (not one of ours). */
function reasonFor(e: unknown, aborted: unknown): unknown {
  return aborted !== undefined && !(e instanceof DomainError) ? aborted : e;
}

/** Builds the grpc-js handler for one method: context, error mapping, one summary log line. */
export function wrapHandler(
  method: string,
  impl: UnaryImpl<unknown, unknown> | StreamImpl<unknown, unknown> | undefined,
  streaming: boolean,
  opts: HandlerOptions,
): grpc.UntypedHandleCall {
  const logger = opts.logger;
  const level = POLLED.test(method) ? 'debug' : 'info';
  const finish = (fields: Record<string, string>, started: bigint, err: DomainError | null): void => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const code = err ? grpcStatusOf(err.kind) : grpc.status.OK;
    const failed = err !== null && code !== grpc.status.NOT_FOUND && code !== grpc.status.UNIMPLEMENTED;
    // winston formats an entry before its transport drops it for its level: skip that work
    if (failed || logger.isLevelEnabled(level)) {
      const line = { rpc: method, code: grpc.status[code], ms: Math.round(seconds * 1000), ...fields };
      if (failed) logger.warn(`${method} failed: ${err.message}`, line);
      else logger.log(level, method, line);
    }
    opts.onCallDone?.(method, code, seconds);
  };
  if (!impl) {
    const answer = (): DomainError => unimplemented(`${method} is not implemented by crishim`);
    if (streaming) {
      return ((call: grpc.ServerWritableStream<unknown, unknown>) => {
        finish(requestFields(call.request), process.hrtime.bigint(), answer());
        call.destroy(Object.assign(new Error(answer().message), { code: grpc.status.UNIMPLEMENTED }));
      }) as grpc.handleServerStreamingCall<unknown, unknown>;
    }
    return ((call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      const err = answer();
      finish(requestFields(call.request), process.hrtime.bigint(), err);
      cb({ code: grpcStatusOf(err.kind), details: err.message });
    }) as grpc.handleUnaryCall<unknown, unknown>;
  }
  if (streaming) {
    const run = impl as StreamImpl<unknown, unknown>;
    return ((call: grpc.ServerWritableStream<unknown, unknown>) => {
      const started = process.hrtime.bigint();
      const fields = requestFields(call.request);
      const ctx = new Context(method, call, logger, fields);
      const send = (msg: unknown): Promise<void> =>
        new Promise((resolve, reject) => {
          if (ctx.signal.aborted) return reject(ctx.signal.reason);
          // respect back-pressure so a slow client cannot make us buffer without bound
          if (call.write(msg)) resolve();
          else call.once('drain', () => resolve());
        });
      run(call.request, ctx, send)
        .then(() => {
          finish(fields, started, null);
          call.end();
        })
        .catch((e: unknown) => {
          const err = fromDockerError(reasonFor(e, ctx.abortReason()));
          finish(fields, started, err);
          call.destroy(Object.assign(new Error(err.message), { code: grpcStatusOf(err.kind), details: err.message }));
        })
        .finally(() => ctx.dispose());
    }) as grpc.handleServerStreamingCall<unknown, unknown>;
  }
  const run = impl as UnaryImpl<unknown, unknown>;
  return ((call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
    const started = process.hrtime.bigint();
    const fields = requestFields(call.request);
    const ctx = new Context(method, call, logger, fields);
    let result: Promise<unknown>;
    try {
      result = run(call.request, ctx);
    } catch (e) {
      result = Promise.reject(e);
    }
    result
      .then((res) => {
        finish(fields, started, null);
        cb(null, res);
      })
      .catch((e: unknown) => {
        const err = fromDockerError(reasonFor(e, ctx.abortReason()));
        finish(fields, started, err);
        cb({ code: grpcStatusOf(err.kind), details: err.message });
      })
      .finally(() => ctx.dispose());
  }) as grpc.handleUnaryCall<unknown, unknown>;
}
