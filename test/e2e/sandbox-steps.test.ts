/**
 * RunPodSandbox step by step on the real engine: the sandbox image is pulled when absent
 * (from a registry on 127.0.0.1), a pull or a start that fails undoes every earlier step,
 * and a pod run with an explicit runtime handler reports it.
 */
import { randomBytes } from 'crypto';
import { promises as fsp } from 'fs';
import { status } from '@grpc/grpc-js';
import {
  call,
  checkpointFiles,
  codeOf,
  containersOfPod,
  docker,
  podConfig,
  reservedIps,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';
import { startRegistry, type Registry } from './registry';

jest.setTimeout(180_000);

const RUN = `${process.pid}-${randomBytes(3).toString('hex')}`;
const PAUSE = 'registry.k8s.io/pause:3.10';

let reg: Registry;
let pauseRef: string;
let h: Crishim | undefined;

async function dockerHas(ref: string): Promise<boolean> {
  return docker
    .getImage(ref)
    .inspect()
    .then(
      () => true,
      (err: { statusCode?: number }) => {
        if (err.statusCode === 404) return false;
        throw err;
      },
    );
}

/** Everything a sandbox of `uid` could leave: containers, checkpoints, CNI cache entries, IP reservations. */
async function leftovers(d: Crishim, uid: string): Promise<unknown[]> {
  const checkpoints = await checkpointFiles(d);
  const cache = await fsp.readdir(d.cniCacheDir).catch(() => [] as string[]);
  return [...(await containersOfPod(uid)), ...checkpoints, ...cache, ...(await reservedIps(d.cni.ipamDir))];
}

beforeAll(async () => {
  reg = await startRegistry();
  // our pause image under a name only this run uses, then gone from Docker: RunPodSandbox must pull it
  pauseRef = `${reg.host}/crishim-pause-${RUN}:e2e`;
  await docker.getImage(PAUSE).tag({ repo: pauseRef.split(':e2e')[0], tag: 'e2e' });
  const stream = await docker.getImage(pauseRef).push({ authconfig: { serveraddress: reg.host } });
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: Array<{ error?: string }>) => {
      const failed = err?.message ?? out.find((o) => o.error)?.error;
      if (failed) reject(new Error(`push ${pauseRef}: ${failed}`));
      else resolve();
    }),
  );
  await docker.getImage(pauseRef).remove();
});

afterEach(async () => {
  await teardown(h);
  h = undefined;
});

afterAll(async () => {
  await docker
    .getImage(pauseRef)
    .remove({ force: true })
    .catch(() => undefined);
  await reg?.stop();
});

it('pulls an absent sandbox image, runs the pod from it and reports the runtime handler', async () => {
  h = await startCrishim({ subnetIndex: 240, args: ['--pod-infra-container-image', pauseRef] });
  expect(await dockerHas(pauseRef)).toBe(false);
  const config = podConfig('pulled');
  const before = BigInt(Date.now()) * 1_000_000n;
  const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config, runtime_handler: 'runc' });

  expect(await dockerHas(pauseRef)).toBe(true);
  expect((await reg.requests(new RegExp(`(GET|HEAD) /v2/crishim-pause-${RUN}/manifests/e2e`))).length).toBeGreaterThan(
    0,
  );
  const info = await docker.getContainer(id).inspect();
  expect(info.Config.Image).toBe(pauseRef);
  expect(info.HostConfig.Runtime).toBe('runc');

  const st = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status;
  expect(st?.state).toBe('SANDBOX_READY');
  expect(st?.runtime_handler).toBe('runc');
  const listed = (await call(h.runtime, 'ListPodSandbox', { filter: { id } })).items ?? [];
  expect(listed.map((s) => [s.id, s.runtime_handler])).toEqual([[id, 'runc']]);
  expect(listed[0].labels).toEqual(config.labels);
  expect(BigInt(st?.created_at ?? '0')).toBeGreaterThanOrEqual(before);
  expect(BigInt(st?.created_at ?? '0')).toBeLessThanOrEqual(BigInt(Date.now()) * 1_000_000n);
  expect(st?.network?.ip).toMatch(/^10\.88\.240\.\d+$/);
  // one interface, one family: nothing beyond the primary address
  expect(st?.network?.additional_ips ?? []).toEqual([]);

  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
  expect(await leftovers(h, (config.metadata as { uid: string }).uid)).toEqual([]);
});

it('fails with the image named when the sandbox image cannot be pulled, and leaves nothing', async () => {
  const missing = `${reg.host}/crishim-no-such-pause-${RUN}:e2e`;
  h = await startCrishim({ subnetIndex: 241, args: ['--pod-infra-container-image', missing] });
  const config = podConfig('nopull');
  const r = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
  expect(r.code).not.toBe(status.OK);
  expect([status.UNKNOWN, status.INTERNAL]).not.toContain(r.code);
  expect(r.details).toContain(missing);
  expect(await leftovers(h, (config.metadata as { uid: string }).uid)).toEqual([]);
  expect(await dockerHas(missing)).toBe(false);
});

it('undoes create and checkpoint when the pause container fails to start', async () => {
  h = await startCrishim({ subnetIndex: 240 });
  // Docker accepts any net.* sysctl at create; runc fails at start when the kernel has no such file
  const config = podConfig('nostart', { linux: { sysctls: { 'net.ipv4.crishim_no_such_sysctl': '1' } } });
  const r = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
  expect(r.code).not.toBe(status.OK);
  expect(r.details).toMatch(/start/);
  expect(r.details).toContain('nostart');
  expect(await leftovers(h, (config.metadata as { uid: string }).uid)).toEqual([]);
});
