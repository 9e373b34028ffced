import * as fs from 'fs';
import * as net from 'net';
import * as grpc from '@grpc/grpc-js';
import { serveConnection } from './accept-connection';
import { AuthorityRelay } from './authority-relay';
import { wrapHandler, type HandlerOptions } from './call-handler';
import { withCachedListEncoding } from './list-encoding';
import { MAX_MESSAGE_BYTES } from './proto';
import { criServiceDefinition } from './service-definitions';
import { withStatsEncoding } from './stats-encoding';
import type { ImageImpl, RuntimeImpl, StreamImpl, UnaryImpl } from './rpc';
import { STREAMING_METHODS } from './rpc';
import { activatedFd, prepareSocket, SD_LISTEN_FDS_START, socketPathOf } from './socket';

export interface CriServerOptions extends HandlerOptions {
  /** `unix:///path/to.sock` (or a bare path). */
  endpoint: string;
  runtime: RuntimeImpl;
  image: ImageImpl;
}

export interface CriServer {
  readonly socketPath: string;
  /** Stops accepting, lets in-flight calls finish (up to `graceMs`), removes the socket. */
  shutdown(graceMs?: number): Promise<void>;
}

function buildService(
  definition: grpc.ServiceDefinition,
  impls: Record<string, unknown>,
  opts: CriServerOptions,
): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  const streaming = new Set<string>(STREAMING_METHODS);
  for (const method of Object.keys(definition)) {
    out[method] = wrapHandler(
      method,
      impls[method] as UnaryImpl<unknown, unknown> | StreamImpl<unknown, unknown> | undefined,
      streaming.has(method),
      opts,
    );
  }
  return out;
}

export function createGrpcServer(opts: CriServerOptions): grpc.Server {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    // channelz (grpc-js's per-call counters and timestamps, for a channelz service crishim does not
    // serve) allocated more per call than crishim's own handler
    'grpc.enable_channelz': 0,
  });
  const runtime = withStatsEncoding(withCachedListEncoding(criServiceDefinition('RuntimeService')));
  server.addService(runtime, buildService(runtime, opts.runtime, opts));
  const image = criServiceDefinition('ImageService');
  server.addService(image, buildService(image, opts.image, opts));
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
 * grpc-js, so the :authority rewrite (authority-fix.ts) can sit in between.
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
  const relay = new AuthorityRelay((c) => injector.injectConnection(c));
  await relay.start();
  const routes = relay.routes();
  const listener = net.createServer((conn) => serveConnection(conn, routes));
  try {
    await new Promise<void>((resolve, reject) => {
      listener.once('error', (err) => reject(new Error(`cannot listen on ${socketPath}: ${err.message}`)));
      if (fd !== undefined) listener.listen({ fd }, () => resolve());
      else listener.listen(socketPath, () => resolve());
    });
    if (!activated) fs.chmodSync(socketPath, 0o660);
  } catch (err) {
    // whoever started the server may go on (a test, a retried start): nothing of it stays listening
    listener.close();
    relay.close();
    throw err;
  }
  opts.logger.info(activated ? 'CRI server listening on the socket-activated fd' : 'CRI server listening', {
    socket: socketPath,
  });
  return {
    socketPath,
    async shutdown(graceMs = 10_000) {
      listener.close();
      relay.close();
      await gracefulShutdown(server, graceMs);
      injector.destroy();
      if (!activated) fs.rmSync(socketPath, { force: true });
    },
  };
}
