/**
 * The floor under the kubelet load's figures: the same client and loops against
 * bench/replay-server.ts, which answers with crishim's own bytes and does nothing else.
 * What crishim takes beyond it is crishim's; what the floor takes, no work inside a grpc-js
 * server can remove.
 */
import { spawn } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import type { PackageDefinition } from '@grpc/proto-loader';
import { connectCri, criCall, loadCriDefinition } from './cri-endpoint';
import type { Answers } from './replay-server';

export interface ReplayFloor {
  pid: number;
  call<T>(method: string, req: unknown): Promise<T>;
  relist(): Promise<unknown>;
  statsRound(): Promise<unknown>;
  imageFsInfo(): Promise<unknown>;
  close(): Promise<void>;
}

interface MethodDef {
  path: string;
  requestSerialize(v: unknown): Buffer;
  responseDeserialize(b: Buffer): unknown;
}
const methodOf = (def: PackageDefinition, service: string, method: string): MethodDef =>
  (def[`runtime.v1.${service}`] as unknown as Record<string, MethodDef>)[method];

/** The kubelet load's calls about one pod and the whole node, in the order the last of a method is its default. */
async function record(endpoint: string, def: PackageDefinition, podId: string): Promise<Answers> {
  const client = new grpc.Client(endpoint, grpc.credentials.createInsecure());
  const answers: Answers = {};
  const ask = (service: string, method: string, req: unknown): Promise<Buffer> => {
    const m = methodOf(def, service, method);
    const reqBytes = m.requestSerialize(req);
    return new Promise<Buffer>((resolve, reject) =>
      client.makeUnaryRequest(
        m.path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        reqBytes,
        (e, res) => (e || !res ? reject(e ?? new Error(`${method}: no answer`)) : resolve(res)),
      ),
    ).then((res) => {
      const byRequest = (answers[m.path] ??= {});
      byRequest[reqBytes.toString('hex')] = byRequest.default = res.toString('base64');
      return res;
    });
  };
  try {
    for (const m of [
      'ListPodSandbox',
      'ListContainers',
      'Status',
      'Version',
      'ListContainerStats',
      'ListPodSandboxStats',
    ])
      await ask('RuntimeService', m, {});
    await ask('ImageService', 'ImageFsInfo', {});
    await ask('RuntimeService', 'PodSandboxStatus', { pod_sandbox_id: podId });
    const ctrs = await ask('RuntimeService', 'ListContainers', { filter: { pod_sandbox_id: podId } });
    const { containers } = methodOf(def, 'RuntimeService', 'ListContainers').responseDeserialize(ctrs) as {
      containers: Array<{ id: string }>;
    };
    for (const c of containers) await ask('RuntimeService', 'ContainerStatus', { container_id: c.id });
    return answers;
  } finally {
    client.close();
  }
}

/** Records crishim's answers about `podId` and the node, and starts a replay server on them. */
export async function startReplayFloor(crishimEndpoint: string, repo: string, podId: string): Promise<ReplayFloor> {
  const answers = await record(crishimEndpoint, loadCriDefinition(repo), podId);
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-replay-'));
  const file = path.join(dir, 'answers.json');
  await fsp.writeFile(file, JSON.stringify(answers));
  const socket = path.join(dir, 'replay.sock');
  const proc = spawn(process.execPath, [path.join(__dirname, 'replay-server.js'), socket, file], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`replay server exited (${code}) before it was ready`)));
    proc.stdout?.once('data', () => resolve());
  });
  const client = connectCri(`unix://${socket}`, repo);
  return {
    pid: proc.pid ?? 0,
    call: (method, req) => criCall(client.runtime, method, req),
    relist: () => client.kubelet.relist(),
    statsRound: () => client.kubelet.statsRound(),
    imageFsInfo: () => criCall(client.image, 'ImageFsInfo', {}),
    async close() {
      client.close();
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
}
