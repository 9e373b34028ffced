/**
 * Stats end to end: a pod with its own cgroup parent (read as the pod cgroup),
 * a pod under Docker's default parent (summed), CPU, memory, network, a stopped
 * container, filters, and the Stream twins.
 */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import { status } from '@grpc/grpc-js';
import { BUSYBOX, call, codeOf, collect, podConfig, startCrishim, teardown, type Crishim } from './harness';
import { CGROUP_V2, cgroupDirOf, kubeletCgroupParent } from '../support/cgroups';
import { fdsOn } from '../support/fds';

jest.setTimeout(240_000);

const HOG_BYTES = 40 * 1024 * 1024;
/** A cgroup parent of our own, in the form a kubelet of Docker's cgroup driver gives it; also the pod cgroup's path under each hierarchy's root. */
const { parent: PARENT, systemd: SYSTEMD } = kubeletCgroupParent(`stats${process.pid}`);
const POD_LIMIT = 512 * 1024 * 1024;

let h: Crishim;
const pods: Array<{ id: string; config: Record<string, unknown> }> = [];
let own: { id: string; config: Record<string, unknown> };
let shared: { id: string; config: Record<string, unknown> };
let burner: string;
let hog: string;
let sleeper: string;
let exited: string;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const n = (v: { value?: string } | null | undefined): number => Number(v?.value ?? 'NaN');

async function runPod(
  name: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; config: Record<string, unknown> }> {
  const config = podConfig(name, extra);
  const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
  const pod = { id, config };
  pods.push(pod);
  return pod;
}

async function run(
  pod: { id: string; config: Record<string, unknown> },
  name: string,
  command: string[],
  labels: Record<string, string> = {},
): Promise<string> {
  const { container_id: id } = await call(h.runtime, 'CreateContainer', {
    pod_sandbox_id: pod.id,
    config: {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX },
      command,
      labels: { 'stats-e2e': name, ...labels },
    },
    sandbox_config: pod.config,
  });
  await call(h.runtime, 'StartContainer', { container_id: id });
  return id;
}

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`${what}: last value ${JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? String(x) : x))}`);
    await sleep(300);
  }
}

/** A container's (or a pod's pause) main process, as Docker knows it. */
const pidOf = (id: string): number =>
  Number(execFileSync('docker', ['inspect', '-f', '{{.State.Pid}}', id], { encoding: 'utf8' }).trim());
const containerStats = async (id: string) => (await call(h.runtime, 'ContainerStats', { container_id: id })).stats;
const podStats = async (id: string) => (await call(h.runtime, 'PodSandboxStats', { pod_sandbox_id: id })).stats;

beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 223 });
  own = await runPod('stats-own', { linux: { cgroup_parent: PARENT } });
  shared = await runPod('stats-shared');
  burner = await run(own, 'burner', ['sh', '-c', 'while :; do :; done'], { role: 'cpu' });
  // the string lives in a shell variable (anonymous memory); the loop keeps this shell alive
  // (ash would exec a last plain command and drop the variable)
  hog = await run(
    own,
    'hog',
    ['sh', '-c', `x=$(head -c ${HOG_BYTES} /dev/zero | tr '\\0' a); while true; do sleep 3600; done`],
    { role: 'mem' },
  );
  sleeper = await run(shared, 'sleeper', ['sh', '-c', 'while true; do sleep 3600; done']);
  exited = await run(shared, 'exited', ['true']);
});

afterAll(async () => {
  for (const p of pods) {
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: p.id }).catch(() => undefined);
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: p.id }).catch(() => undefined);
  }
  await teardown(h);
  // the pod cgroup this file made (empty once its containers are gone); systemd's slices are its own to remove
  if (SYSTEMD) {
    try {
      execFileSync('systemctl', ['stop', 'crishim_e2e.slice'], { stdio: 'ignore' });
    } catch {
      /* already gone */
    }
    return;
  }
  for (const c of [
    'memory',
    'cpu,cpuacct',
    'cpuacct',
    'cpu',
    'pids',
    'blkio',
    'cpuset',
    'devices',
    'freezer',
    'systemd',
    'unified',
    '',
  ]) {
    await fsp.rmdir(`/sys/fs/cgroup/${c}${PARENT}`).catch(() => undefined);
  }
});

it('gives a busy container a CPU rate from its first sample, and a rising counter', async () => {
  const first = await containerStats(burner);
  // first sight: a short second reading gives a rate at once
  expect(first?.cpu?.usage_nano_cores).not.toBeNull();
  await sleep(1000);
  const second = await containerStats(burner);
  expect(BigInt(second?.cpu?.usage_core_nano_seconds?.value ?? '0')).toBeGreaterThan(
    BigInt(first?.cpu?.usage_core_nano_seconds?.value ?? '0'),
  );
  expect(n(second?.cpu?.usage_nano_cores)).toBeGreaterThan(0);
  expect(second?.attributes?.metadata?.name).toBe('burner');
  expect(second?.writable_layer?.fs_id?.mountpoint).toBeTruthy();
});

it('shows a working set and RSS near what a container holds', async () => {
  const s = await until(
    'hog working set and RSS',
    () => containerStats(hog),
    // both: cgroup v2's memory.stat (where RSS comes from) is flushed lazily, memory.current is not
    (v) => n(v?.memory?.working_set_bytes) >= HOG_BYTES * 0.9 && n(v?.memory?.rss_bytes) >= HOG_BYTES * 0.9,
  );
  expect(n(s?.memory?.working_set_bytes)).toBeLessThan(HOG_BYTES * 3);
  expect(n(s?.memory?.usage_bytes)).toBeGreaterThanOrEqual(n(s?.memory?.working_set_bytes));
  // no limit on the container: nothing to be available against
  expect(s?.memory?.available_bytes ?? null).toBeNull();
});

it('puts a pod with a cgroup parent where the kubelet looks for it', async () => {
  // the kubelet reads and limits the pod cgroup at the path it named, whatever Docker's driver
  const escaped = PARENT.replace(/\./g, '\\.');
  for (const id of [own.id, burner, hog]) {
    const dir = await cgroupDirOf(pidOf(id), 'memory');
    expect(dir).toMatch(new RegExp(`^/sys/fs/cgroup(/memory)?${escaped}/[^/]*${id}[^/]*$`));
  }
});

// Docker's cgroupfs driver takes a slice path as plain directories; its systemd driver takes only slices
(SYSTEMD ? it : it.skip)('refuses a cgroupfs parent when Docker uses systemd, naming the fix', async () => {
  const before = (await call(h.runtime, 'ListPodSandbox', {})).items.length;
  const config = podConfig('stats-wrong-driver', { linux: { cgroup_parent: '/crishim-e2e/pod1' } });
  const { code, details } = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
  expect(code).toBe(status.FAILED_PRECONDITION);
  expect(details).toMatch(/cgroup_parent "\/crishim-e2e\/pod1" is not a systemd slice.*cgroupDriver systemd/);
  expect((await call(h.runtime, 'ListPodSandbox', {})).items).toHaveLength(before);
});

it('reads a pod with its own cgroup parent from the pod cgroup (limit included)', async () => {
  // what a kubelet does to a pod cgroup; crishim only reads it (v2: one unified directory)
  const limitFile = CGROUP_V2
    ? `/sys/fs/cgroup${PARENT}/memory.max`
    : `/sys/fs/cgroup/memory${PARENT}/memory.limit_in_bytes`;
  await fsp.writeFile(limitFile, String(POD_LIMIT));
  const s = await until(
    'pod working set',
    () => podStats(own.id),
    (v) => n(v?.linux?.memory?.working_set_bytes) >= HOG_BYTES * 0.9,
  );
  const ws = n(s?.linux?.memory?.working_set_bytes);
  expect(n(s?.linux?.memory?.available_bytes)).toBe(POD_LIMIT - ws);
  const ids = s?.linux?.containers?.map((c) => c.attributes?.id).sort();
  expect(ids).toEqual([burner, hog].sort());
  const burnerCpu = BigInt(
    s?.linux?.containers?.find((c) => c.attributes?.id === burner)?.cpu?.usage_core_nano_seconds?.value ?? '0',
  );
  expect(BigInt(s?.linux?.cpu?.usage_core_nano_seconds?.value ?? '0')).toBeGreaterThanOrEqual(burnerCpu);
  // pause + burner's shell + hog's shell (and its sleep)
  expect(n(s?.linux?.process?.process_count)).toBeGreaterThanOrEqual(3);
});

it('counts pod network bytes after traffic to the pod IP', async () => {
  const ip = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: shared.id })).status?.network?.ip ?? '';
  expect(ip).toMatch(/^10\.88\.223\./);
  const before = await podStats(shared.id);
  execFileSync('ping', ['-c', '20', '-i', '0.05', '-s', '1000', '-W', '2', ip]);
  const after = await podStats(shared.id);
  expect(after?.linux?.network?.default_interface?.name).toBe('eth0');
  const rx = (s: typeof after): number => n(s?.linux?.network?.default_interface?.rx_bytes);
  const tx = (s: typeof after): number => n(s?.linux?.network?.default_interface?.tx_bytes);
  expect(rx(after) - rx(before)).toBeGreaterThanOrEqual(20 * 1000);
  expect(tx(after) - tx(before)).toBeGreaterThanOrEqual(20 * 1000);
  // summed pod (Docker's default parent): its containers' working sets add up into it
  const sum = (after?.linux?.containers ?? []).reduce((a, c) => a + n(c.memory?.working_set_bytes), 0);
  expect(n(after?.linux?.memory?.working_set_bytes)).toBeGreaterThanOrEqual(sum);
});

it('answers a stopped container with zero usage, not an error', async () => {
  await until(
    'exit',
    async () => (await call(h.runtime, 'ContainerStatus', { container_id: exited })).status?.state,
    (s) => s === 'CONTAINER_EXITED',
  );
  const s = await containerStats(exited);
  expect(s?.attributes?.id).toBe(exited);
  expect(s?.cpu?.usage_core_nano_seconds?.value).toBe('0');
  expect(s?.memory?.working_set_bytes?.value).toBe('0');
});

it('filters ListContainerStats by id prefix, pod and labels; unknown ids are NOT_FOUND', async () => {
  const ids = async (filter: Record<string, unknown>): Promise<string[]> =>
    ((await call(h.runtime, 'ListContainerStats', { filter })).stats ?? []).map((s) => s.attributes?.id ?? '').sort();
  expect(await ids({ id: burner.slice(0, 16) })).toEqual([burner]);
  expect(await ids({ pod_sandbox_id: shared.id })).toEqual([sleeper, exited].sort());
  expect(await ids({ pod_sandbox_id: own.id, label_selector: { role: 'mem' } })).toEqual([hog]);
  expect(await ids({ label_selector: { 'stats-e2e': 'sleeper' } })).toEqual([sleeper]);
  expect((await codeOf(call(h.runtime, 'ContainerStats', { container_id: 'f'.repeat(64) }))).code).toBe(
    status.NOT_FOUND,
  );
  expect((await codeOf(call(h.runtime, 'PodSandboxStats', { pod_sandbox_id: 'f'.repeat(64) }))).code).toBe(
    status.NOT_FOUND,
  );
  // a pod sandbox id is not a container id
  expect((await codeOf(call(h.runtime, 'ContainerStats', { container_id: own.id }))).code).toBe(status.NOT_FOUND);
  const pod = await call(h.runtime, 'ListPodSandboxStats', { filter: { label_selector: { test: 'stats-own' } } });
  expect(pod.stats?.map((s) => s.attributes?.id)).toEqual([own.id]);
});

it('streams the same sets as the List RPCs', async () => {
  const mine = new Set([burner, hog, sleeper, exited]);
  const listed = ((await call(h.runtime, 'ListContainerStats', {})).stats ?? [])
    .map((s) => s.attributes?.id ?? '')
    .filter((id) => mine.has(id));
  const streamed = (await collect(h.runtime.StreamContainerStats({})))
    .flatMap((m) => m.container_stats)
    .map((s) => s.attributes?.id ?? '')
    .filter((id) => mine.has(id));
  expect(streamed.sort()).toEqual(listed.sort());
  expect(listed).toHaveLength(4);

  const podIds = new Set(pods.map((p) => p.id));
  const listedPods = ((await call(h.runtime, 'ListPodSandboxStats', {})).stats ?? [])
    .map((s) => s.attributes?.id ?? '')
    .filter((id) => podIds.has(id));
  const streamedPods = (await collect(h.runtime.StreamPodSandboxStats({})))
    .flatMap((m) => m.pod_sandbox_stats)
    .map((s) => s.attributes?.id ?? '')
    .filter((id) => podIds.has(id));
  expect(streamedPods.sort()).toEqual(listedPods.sort());
  expect(listedPods).toHaveLength(2);

  const filtered = (await collect(h.runtime.StreamContainerStats({ filter: { pod_sandbox_id: own.id } }))).flatMap(
    (m) => m.container_stats,
  );
  expect(filtered.map((s) => s.attributes?.id).sort()).toEqual([burner, hog].sort());

  const listedMetrics = ((await call(h.runtime, 'ListPodSandboxMetrics', {})).pod_metrics ?? [])
    .map((p) => p.pod_sandbox_id)
    .filter((id) => podIds.has(id));
  const streamedMetrics = (await collect(h.runtime.StreamPodSandboxMetrics({})))
    .flatMap((m) => m.pod_sandbox_metrics)
    .map((p) => p.pod_sandbox_id)
    .filter((id) => podIds.has(id));
  expect(streamedMetrics.sort()).toEqual(listedMetrics.sort());
});

it('serves cAdvisor metrics whose label values match the descriptors', async () => {
  const d = await call(h.runtime, 'ListMetricDescriptors', {});
  const keys = new Map((d.descriptors ?? []).map((x) => [x.name, x.label_keys ?? []]));
  for (const name of [
    'container_cpu_usage_seconds_total',
    'container_memory_working_set_bytes',
    'container_memory_usage_bytes',
    'container_memory_rss',
    'container_network_receive_bytes_total',
    'container_network_transmit_bytes_total',
    'container_fs_usage_bytes',
    'container_processes',
  ]) {
    expect(keys.has(name)).toBe(true);
  }
  const m = await call(h.runtime, 'ListPodSandboxMetrics', {});
  const ownMetrics = m.pod_metrics?.find((p) => p.pod_sandbox_id === own.id);
  const all = [
    ...(ownMetrics?.metrics ?? []),
    ...(ownMetrics?.container_metrics ?? []).flatMap((c) => c.metrics ?? []),
  ];
  for (const x of all) expect(x.label_values).toHaveLength(keys.get(x.name)?.length ?? -1);
  const hogWs = ownMetrics?.container_metrics
    ?.find((c) => c.container_id === hog)
    ?.metrics?.find((x) => x.name === 'container_memory_working_set_bytes');
  expect(n(hogWs?.value)).toBeGreaterThanOrEqual(HOG_BYTES * 0.9);
  expect(hogWs?.label_values?.[0]).toBe('hog');
  const sharedMetrics = m.pod_metrics?.find((p) => p.pod_sandbox_id === shared.id);
  expect(
    sharedMetrics?.metrics?.some((x) => x.name === 'container_network_receive_bytes_total' && n(x.value) > 20 * 1000),
  ).toBe(true);
});

/** The daemon's fds open on `file` (a kept /proc/<pid>/net/dev holds that pod's netns). */
const daemonFdsOn = (file: string): Promise<number> => fdsOn(file, h.proc.pid ?? 0);

it("lets go of a pod's network namespace when the pod stops, or its pause dies behind crishim", async () => {
  const stopped = await runPod('stats-netns-stop');
  const killed = await runPod('stats-netns-kill');
  const files = [stopped, killed].map((p) => `/proc/${pidOf(p.id)}/net/dev`);
  const { stats } = await call(h.runtime, 'ListPodSandboxStats', {});
  for (const p of [stopped, killed]) {
    expect(stats.find((s) => s.attributes?.id === p.id)?.linux?.network?.default_interface?.name).toBe('eth0');
  }
  for (const f of files) expect(await daemonFdsOn(f)).toBe(1);

  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: stopped.id });
  expect(await daemonFdsOn(files[0])).toBe(0);

  execFileSync('docker', ['kill', killed.id], { stdio: 'ignore' });
  await until(
    'the killed pod reads as not ready',
    async () => (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: killed.id })).status?.state,
    (s) => s === 'SANDBOX_NOTREADY',
  );
  await call(h.runtime, 'ListPodSandboxStats', {});
  expect(await daemonFdsOn(files[1])).toBe(0);
});

it("closes a container's cgroup files at the first stats call after its pod is gone", async () => {
  const pod = await runPod('stats-fd-gone');
  const ctr = await run(pod, 'app', ['sleep', '3600']);
  const pid = pidOf(ctr);
  // where the kernel put it: the memory hierarchy on v1, the unified one on v2
  const memoryStat = `${await cgroupDirOf(pid, 'memory')}/memory.stat`;
  await Promise.all([call(h.runtime, 'ListContainerStats', {}), call(h.runtime, 'ListPodSandboxStats', {})]);
  expect(await daemonFdsOn(memoryStat)).toBe(1);

  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id });
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id });
  await Promise.all([call(h.runtime, 'ListContainerStats', {}), call(h.runtime, 'ListPodSandboxStats', {})]);
  expect(await daemonFdsOn(memoryStat)).toBe(0);
});
