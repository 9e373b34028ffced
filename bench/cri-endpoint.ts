/**
 * A CRI endpoint the bench talks to: crishim's own, or another runtime's named
 * by `--compare` (cri-dockerd, containerd, any CRI v1 server), so the same calls
 * can be measured against each in one run.
 */
import { readFileSync } from 'fs';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../src/generated/api';
import type { RuntimeServiceClient } from '../src/generated/runtime/v1/RuntimeService';
import type { ImageServiceClient } from '../src/generated/runtime/v1/ImageService';
import { connectKubeletClient, type KubeletClient } from './kubelet-client';

export interface CriClient {
  runtime: RuntimeServiceClient;
  image: ImageServiceClient;
  /** The kubelet's polling calls as its client makes them (bench/kubelet-client.ts); connects on first use. */
  kubelet: KubeletClient;
  close(): void;
}

/** One `--compare` entry: where the runtime listens, what to call it, and its process (pid or pidfile). */
export interface CompareSpec {
  endpoint: string;
  name: string;
  pid: string;
}

/** The CRI package as the bench's clients load it (the options decide how answers are decoded). */
export function loadCriDefinition(repo: string): protoLoader.PackageDefinition {
  return protoLoader.loadSync(path.join(repo, 'proto', 'runtime', 'v1', 'api.proto'), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
}

export function connectCri(endpoint: string, repo: string): CriClient {
  const def = loadCriDefinition(repo);
  const proto = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  const runtime = new proto.runtime.v1.RuntimeService(
    endpoint,
    grpc.credentials.createInsecure(),
  ) as unknown as RuntimeServiceClient;
  const image = new proto.runtime.v1.ImageService(
    endpoint,
    grpc.credentials.createInsecure(),
  ) as unknown as ImageServiceClient;
  const kubelet = connectKubeletClient(endpoint);
  return { runtime, image, kubelet, close: () => (runtime.close(), image.close(), kubelet.close()) };
}

type Unary<T> = (r: unknown, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: Error | null, res: T) => void) => void;

/** A unary call by method name on a generated client (RuntimeService or ImageService). */
export function criCall<T>(
  client: RuntimeServiceClient | ImageServiceClient,
  method: string,
  req: unknown,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Unary<T> | undefined>)[method];
    if (!fn) return reject(new Error(`no CRI method ${method}`));
    fn.call(client, req, new grpc.Metadata(), { deadline: Date.now() + 300_000 }, (e, res) =>
      e ? reject(e) : resolve(res),
    );
  });
}

/**
 * `--compare=unix:///tmp/cmp/cri-dockerd.sock:cri-dockerd:1234,unix:///run/c.sock:containerd:/run/c.pid`:
 * the endpoint keeps its own colons, so name and pid are the last two fields.
 */
export function parseCompare(argv: string[]): CompareSpec[] {
  const arg = argv.find((a) => a.startsWith('--compare='))?.slice('--compare='.length);
  if (!arg) return [];
  return arg.split(',').map((entry) => {
    const fields = entry.split(':');
    const pid = fields.pop();
    const name = fields.pop();
    const endpoint = fields.join(':');
    if (!pid || !name || !endpoint.startsWith('unix://'))
      throw new Error(`--compare entry ${JSON.stringify(entry)}: want unix://SOCKET:NAME:PID (or PIDFILE)`);
    return { endpoint, name, pid };
  });
}

/** A pid given as a number or as the path of a pidfile. */
export function resolvePid(spec: string): number {
  const pid = Number(/^\d+$/.test(spec) ? spec : readFileSync(spec, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0)
    throw new Error(`--compare pid ${JSON.stringify(spec)} is neither a pid nor a pidfile holding one`);
  return pid;
}
