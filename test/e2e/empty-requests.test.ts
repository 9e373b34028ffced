/**
 * Every RPC of both services called with an empty request (all fields at their defaults):
 * each answers with a deliberate status (or OK), never UNKNOWN/INTERNAL, and the daemon stays up.
 * cri-dockerd crashes on several of these; the kubelet never sends them, but a fuzzing or
 * buggy client can.
 */
import * as grpc from '@grpc/grpc-js';
import * as protobuf from 'protobufjs';
import { PROTO_PATH } from '../../src/server/proto';
import { call, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(120_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 243 });
});
afterAll(() => teardown(h));

type AnyCall = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb?: (e: grpc.ServiceError | null) => void,
) => unknown;

/** The status an empty request gets: unary calls answer once; streams are read until they end or fail. */
function answer(client: grpc.Client, method: protobuf.Method): Promise<grpc.status> {
  const fn = (client as unknown as Record<string, AnyCall>)[method.name];
  const opts = { deadline: Date.now() + 20_000 };
  return new Promise((resolve) => {
    if (!method.responseStream) {
      fn.call(client, {}, new grpc.Metadata(), opts, (e) => resolve(e ? e.code : grpc.status.OK));
      return;
    }
    const s = fn.call(client, {}, new grpc.Metadata(), opts) as grpc.ClientReadableStream<unknown>;
    s.on('data', () => undefined);
    s.on('error', (e: grpc.ServiceError) => resolve(e.code));
    s.on('end', () => resolve(grpc.status.OK));
    // GetContainerEvents never ends by itself: being subscribed without an error is the answer
    if (method.name === 'GetContainerEvents')
      setTimeout(() => {
        s.cancel();
        resolve(grpc.status.OK);
      }, 500);
  });
}

it('answers an empty request to every RPC with a deliberate status', async () => {
  const root = protobuf.loadSync(PROTO_PATH);
  const answers: Record<string, string> = {};
  for (const [svc, client] of [
    ['runtime.v1.RuntimeService', h.runtime],
    ['runtime.v1.ImageService', h.image],
  ] as const) {
    for (const m of root.lookupService(svc).methodsArray) answers[m.name] = grpc.status[await answer(client, m)];
  }
  expect(Object.keys(answers)).toHaveLength(43);
  const crashes = Object.entries(answers).filter(
    ([, code]) => code === 'UNKNOWN' || code === 'INTERNAL' || code === 'UNAVAILABLE',
  );
  expect(crashes).toEqual([]);
  // requests that name nothing are refused as such, not looked up
  for (const m of [
    'RunPodSandbox',
    'StopPodSandbox',
    'RemovePodSandbox',
    'PodSandboxStatus',
    'CreateContainer',
    'StartContainer',
    'StopContainer',
    'RemoveContainer',
    'ContainerStatus',
    'ExecSync',
    'Exec',
    'Attach',
    'PortForward',
    'PullImage',
  ]) {
    expect([m, answers[m]]).toEqual([m, 'INVALID_ARGUMENT']);
  }
  // reads with no filter list everything
  for (const m of [
    'Version',
    'Status',
    'ListPodSandbox',
    'ListContainers',
    'ListImages',
    'ImageFsInfo',
    'ListContainerStats',
  ]) {
    expect([m, answers[m]]).toEqual([m, 'OK']);
  }
  expect((await call(h.runtime, 'Version', {})).runtime_name).toBe('docker');
  expect(h.proc.exitCode).toBeNull();
});
