import { execFileSync } from 'child_process';
import { status } from '@grpc/grpc-js';
import { BUSYBOX, call, codeOf, collect, podConfig, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(180_000);

let h: Crishim;
let pod: string;
let config: Record<string, unknown>;
let burner: string;
let hog: string;

const HOG_BYTES = 48 * 1024 * 1024;

async function run(name: string, command: string[], labels: Record<string, string> = {}): Promise<string> {
  const { container_id: id } = await call(h.runtime, 'CreateContainer', {
    pod_sandbox_id: pod,
    config: { metadata: { name, attempt: 0 }, image: { image: BUSYBOX }, command, labels },
    sandbox_config: config,
  });
  await call(h.runtime, 'StartContainer', { container_id: id });
  return id;
}

beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 214 });
  config = podConfig('stats');
  pod = (await call(h.runtime, 'RunPodSandbox', { config })).pod_sandbox_id;
  burner = await run('burner', ['sh', '-c', 'while :; do :; done'], { role: 'cpu' });
  // holds HOG_BYTES in a shell variable (anonymous memory), then sleeps
  // (the loop keeps the shell alive: ash would exec a final plain command and drop the variable)
  hog = await run(
    'hog',
    ['sh', '-c', `x=$(head -c ${HOG_BYTES} /dev/zero | tr '\\0' a); echo ready; while true; do sleep 3600; done`],
    { role: 'mem' },
  );
});
afterAll(async () => {
  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
  await teardown(h);
});

it('shows CPU usage rising between two samples of a busy container', async () => {
  const first = (await call(h.runtime, 'ContainerStats', { container_id: burner })).stats;
  await new Promise((r) => setTimeout(r, 1500));
  const second = (await call(h.runtime, 'ContainerStats', { container_id: burner })).stats;
  expect(second?.attributes?.metadata?.name).toBe('burner');
  expect(BigInt(second?.cpu?.usage_core_nano_seconds?.value ?? '0')).toBeGreaterThan(
    BigInt(first?.cpu?.usage_core_nano_seconds?.value ?? '0'),
  );
  // a busy loop uses a good part of a core: well above a tenth of one
  expect(Number(second?.cpu?.usage_nano_cores?.value ?? '0')).toBeGreaterThan(1e8);
});

it('shows the working set of a container holding memory near its allocation', async () => {
  const deadline = Date.now() + 60_000;
  let ws = 0;
  while (Date.now() < deadline) {
    ws = Number(
      (await call(h.runtime, 'ContainerStats', { container_id: hog })).stats?.memory?.working_set_bytes?.value ?? '0',
    );
    if (ws >= HOG_BYTES * 0.9) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  expect(ws).toBeGreaterThanOrEqual(HOG_BYTES * 0.9);
  expect(ws).toBeLessThan(HOG_BYTES * 3);
});

it('counts pod network bytes after traffic to the pod IP', async () => {
  const ip = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod })).status?.network?.ip ?? '';
  const rx = async (): Promise<number> => {
    const s = (await call(h.runtime, 'PodSandboxStats', { pod_sandbox_id: pod })).stats;
    return Number(s?.linux?.network?.default_interface?.rx_bytes?.value ?? '0');
  };
  const before = await rx();
  execFileSync('ping', ['-c', '20', '-i', '0.05', '-s', '1000', '-W', '2', ip]);
  const after = await rx();
  expect(after - before).toBeGreaterThanOrEqual(20 * 1000);
  const stats = (await call(h.runtime, 'PodSandboxStats', { pod_sandbox_id: pod })).stats;
  expect(stats?.linux?.network?.default_interface?.name).toBe('eth0');
  expect(stats?.linux?.containers?.map((c) => c.attributes?.id).sort()).toEqual([burner, hog].sort());
  expect(Number(stats?.linux?.process?.process_count?.value ?? '0')).toBeGreaterThanOrEqual(3);
});

it('filters ListContainerStats and matches the Stream twins', async () => {
  const byLabel = await call(h.runtime, 'ListContainerStats', { filter: { label_selector: { role: 'cpu' } } });
  expect(byLabel.stats?.map((s) => s.attributes?.id)).toEqual([burner]);
  const byPod = await call(h.runtime, 'ListContainerStats', { filter: { pod_sandbox_id: pod } });
  expect(byPod.stats?.map((s) => s.attributes?.id).sort()).toEqual([burner, hog].sort());
  const streamed = (await collect(h.runtime.StreamContainerStats({ filter: { pod_sandbox_id: pod } }))).flatMap(
    (m) => m.container_stats,
  );
  expect(streamed.map((s) => s.attributes?.id).sort()).toEqual([burner, hog].sort());
  const pods = (await collect(h.runtime.StreamPodSandboxStats({ filter: { id: pod } }))).flatMap(
    (m) => m.pod_sandbox_stats,
  );
  expect(pods.map((p) => p.attributes?.id)).toEqual([pod]);
  expect((await codeOf(call(h.runtime, 'ContainerStats', { container_id: 'f'.repeat(64) }))).code).toBe(
    status.NOT_FOUND,
  );
});

it('serves cAdvisor-style metrics with descriptors', async () => {
  const d = await call(h.runtime, 'ListMetricDescriptors', {});
  const names = d.descriptors?.map((x) => x.name) ?? [];
  expect(names).toEqual(
    expect.arrayContaining([
      'container_cpu_usage_seconds_total',
      'container_memory_working_set_bytes',
      'container_network_receive_bytes_total',
    ]),
  );
  const m = await call(h.runtime, 'ListPodSandboxMetrics', {});
  const mine = m.pod_metrics?.find((p) => p.pod_sandbox_id === pod);
  const hogMetrics = mine?.container_metrics?.find((c) => c.container_id === hog)?.metrics ?? [];
  const wsMetric = hogMetrics.find((x) => x.name === 'container_memory_working_set_bytes');
  expect(Number(wsMetric?.value?.value ?? '0')).toBeGreaterThan(HOG_BYTES * 0.9);
  expect(wsMetric?.label_values?.[0]).toBe('hog');
  expect(
    mine?.metrics?.some((x) => x.name === 'container_network_receive_bytes_total' && Number(x.value?.value) > 0),
  ).toBe(true);
});
