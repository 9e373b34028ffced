import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../logging/logger';
import { withAuthorityFix } from './authority-fix';
import { DomainError, cancelled, deadlineExceeded, unimplemented } from '../errors';
import { fromDockerError } from '../docker/errors';
import { grpcStatusOf } from './errors';
import { loadCriProto, MAX_MESSAGE_BYTES } from './proto';
import type { CallContext, ImageImpl, RuntimeImpl, StreamImpl, UnaryImpl } from './rpc';
import { STREAMING_METHODS } from './rpc';

export interface CriServerOptions {
  /** `unix:///path/to.sock` (or a bare path). */
  endpoint: string;
  runtime: RuntimeImpl;
  image: ImageImpl;
  logger: Logger;
  /** Called after every RPC; the metrics layer hooks in here. */
  onCallDone?: (method: string, code: grpc.status, seconds: number) => void;
}

export interface CriServer {
  readonly socketPath: string;
  /** Stops accepting, lets in-flight calls finish (up to `graceMs`), removes the socket. */
  shutdown(graceMs?: number): Promise<void>;
}

/** RPCs that only read state: logged at debug, since the kubelet polls them constantly. */
const READ_ONLY = /^(Version|Status|List|Stream|.*Status$|.*Stats$|ImageFsInfo|RuntimeConfig|GetContainerEvents|ListMetricDescriptors)/;

/** First fd systemd passes (SD_LISTEN_FDS_START). */
const SD_LISTEN_FDS_START = 3;

/**
 * The listening socket systemd handed over (`fd://`), per sd_listen_fds(3):
 * LISTEN_PID must name us and LISTEN_FDS count at least one fd.
 */
export function activatedFd(env: NodeJS.ProcessEnv = process.env, pid = process.pid): number {
  const fds = Number(env.LISTEN_FDS ?? '0');
  if (env.LISTEN_PID !== String(pid) || !Number.isInteger(fds) || fds < 1) {
    throw new Error('--container-runtime-endpoint fd:// needs socket activation (LISTEN_PID/LISTEN_FDS from systemd), but none was passed');
  }
  return SD_LISTEN_FDS_START;
}

export function socketPathOf(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  if (endpoint.startsWith('/')) return endpoint;
  throw new Error(`unsupported endpoint ${JSON.stringify(endpoint)}: expected unix:///path/to.sock`);
}

/** Resolves true when something accepts connections on the socket path. */
export function socketAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(socketPath);
    const done = (alive: boolean): void => {
      sock.destroy();
      resolve(alive);
    };
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
    sock.setTimeout(1000, () => done(false));
  });
}

/** Replaces a stale socket file; refuses to steal one another live daemon serves. */
async function prepareSocket(socketPath: string, logger: Logger): Promise<void> {
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o750 });
  let st: fs.Stats;
  try {
    st = fs.lstatSync(socketPath);
  } catch {
    return;
  }
  if (!st.isSocket()) {
    throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
  }
  if (await socketAnswers(socketPath)) {
    throw new Error(`another process is already serving on ${socketPath}; stop it first or choose another --container-runtime-endpoint`);
  }
  logger.warn('removing stale socket', { socket: socketPath });
  fs.unlinkSync(socketPath);
}

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

function makeContext(
  method: string,
  call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>,
  logger: Logger,
  fields: Record<string, string>,
): { ctx: CallContext; dispose: () => void } {
  const ac = new AbortController();
  const onCancel = (): void => ac.abort(cancelled(`${method} cancelled by the client`));
  call.on('cancelled', onCancel);
  let timer: NodeJS.Timeout | undefined;
  const deadline = call.getDeadline();
  // a grpc Deadline is absolute (Date or epoch ms); Infinity means none
  const ms = (deadline instanceof Date ? deadline.getTime() : Number(deadline)) - Date.now();
  if (Number.isFinite(ms)) {
    // setTimeout cannot wait longer than 2^31-1 ms
    timer = setTimeout(() => ac.abort(deadlineExceeded(`${method} deadline exceeded`)), Math.min(Math.max(ms, 0), 2 ** 31 - 1));
  }
  const ctx: CallContext = {
    signal: ac.signal,
    method,
    log: logger.child({ rpc: method, ...fields }),
    annotate(more) {
      Object.assign(fields, more);
      ctx.log = logger.child({ rpc: method, ...fields });
    },
  };
  return {
    ctx,
    dispose: () => {
      if (timer) clearTimeout(timer);
      call.removeListener('cancelled', onCancel);
    },
  };
}

/** Builds the grpc-js handler for one method: context, error mapping, one summary log line. */
function wrap(
  method: string,
  impl: UnaryImpl<unknown, unknown> | StreamImpl<unknown, unknown> | undefined,
  streaming: boolean,
  opts: CriServerOptions,
): grpc.UntypedHandleCall {
  const logger = opts.logger;
  const level = READ_ONLY.test(method) ? 'debug' : 'info';
  const finish = (fields: Record<string, string>, started: bigint, err: DomainError | null): void => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const code = err ? grpcStatusOf(err.kind) : grpc.status.OK;
    const line = { rpc: method, code: grpc.status[code], ms: Math.round(seconds * 1000), ...fields };
    if (err && code !== grpc.status.NOT_FOUND && code !== grpc.status.UNIMPLEMENTED) {
      logger.warn(`${method} failed: ${err.message}`, line);
    } else {
      logger.log(level, method, line);
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
      const { ctx, dispose } = makeContext(method, call, logger, fields);
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
          const err = fromDockerError(ctx.signal.aborted && !(e instanceof DomainError) ? ctx.signal.reason : e);
          finish(fields, started, err);
          call.destroy(Object.assign(new Error(err.message), { code: grpcStatusOf(err.kind), details: err.message }));
        })
        .finally(dispose);
    }) as grpc.handleServerStreamingCall<unknown, unknown>;
  }
  const run = impl as UnaryImpl<unknown, unknown>;
  return ((call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
    const started = process.hrtime.bigint();
    const fields = requestFields(call.request);
    const { ctx, dispose } = makeContext(method, call, logger, fields);
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
        const err = fromDockerError(ctx.signal.aborted && !(e instanceof DomainError) ? ctx.signal.reason : e);
        finish(fields, started, err);
        cb({ code: grpcStatusOf(err.kind), details: err.message });
      })
      .finally(dispose);
  }) as grpc.handleUnaryCall<unknown, unknown>;
}

function buildService(
  definition: grpc.ServiceDefinition,
  impls: Record<string, unknown>,
  opts: CriServerOptions,
): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  const streaming = new Set<string>(STREAMING_METHODS);
  for (const method of Object.keys(definition)) {
    out[method] = wrap(
      method,
      impls[method] as UnaryImpl<unknown, unknown> | StreamImpl<unknown, unknown> | undefined,
      streaming.has(method),
      opts,
    );
  }
  return out;
}

export function createGrpcServer(opts: CriServerOptions): grpc.Server {
  const proto = loadCriProto();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  server.addService(proto.runtime.v1.RuntimeService.service, buildService(proto.runtime.v1.RuntimeService.service, opts.runtime, opts));
  server.addService(proto.runtime.v1.ImageService.service, buildService(proto.runtime.v1.ImageService.service, opts.image, opts));
  return server;
}

/** Lets in-flight calls finish for up to `graceMs`, then cuts the rest. */
function gracefulShutdown(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(force);
      resolve();
    });
  });
}

/**
 * Serves on a Unix socket we bind (mode 0660) or on the listening fd systemd
 * passed (`fd://`). Either way we accept connections ourselves and hand them to
 * grpc-js, so the :authority shim (authority-fix.ts) can sit in between.
 */
export async function startCriServer(opts: CriServerOptions): Promise<CriServer> {
  const activated = opts.endpoint.startsWith('fd://');
  const socketPath = activated ? `fd://${SD_LISTEN_FDS_START}` : socketPathOf(opts.endpoint);
  let fd: number | undefined;
  if (activated) {
    fd = activatedFd();
    // the fds must not leak into children (plugins, nsenter)
    delete process.env.LISTEN_FDS;
    delete process.env.LISTEN_PID;
    delete process.env.LISTEN_FDNAMES;
  } else {
    await prepareSocket(socketPath, opts.logger);
  }
  const server = createGrpcServer(opts);
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const listener = net.createServer((conn) => injector.injectConnection(withAuthorityFix(conn)));
  await new Promise<void>((resolve, reject) => {
    listener.once('error', (err) => reject(new Error(`cannot listen on ${socketPath}: ${err.message}`)));
    if (fd !== undefined) listener.listen({ fd }, () => resolve());
    else listener.listen(socketPath, () => resolve());
  });
  if (!activated) fs.chmodSync(socketPath, 0o660);
  opts.logger.info(activated ? 'CRI server listening on the socket-activated fd' : 'CRI server listening', { socket: socketPath });
  return {
    socketPath,
    async shutdown(graceMs = 10_000) {
      listener.close();
      await gracefulShutdown(server, graceMs);
      injector.destroy();
      if (!activated) fs.rmSync(socketPath, { force: true });
    },
  };
}
