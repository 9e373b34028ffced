import { status } from '@grpc/grpc-js';
import {
  BUSYBOX,
  call,
  codeOf,
  collect,
  metricValue,
  podConfig,
  scrapeMetrics,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';
import type { ContainerEventResponse__Output } from '../../src/generated/runtime/v1/ContainerEventResponse';

jest.setTimeout(180_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 203, args: ['--metrics-bind-address', '127.0.0.1:0'] });
});
afterAll(() => teardown(h));

describe('GetContainerEvents', () => {
  it('delivers created, started, stopped and deleted for a container, in order, with statuses', async () => {
    const events: ContainerEventResponse__Output[] = [];
    const stream = h.runtime.GetContainerEvents({});
    stream.on('data', (e: ContainerEventResponse__Output) => events.push(e));
    stream.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 500));

    const config = podConfig('events');
    const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
    const { container_id: id } = await call(h.runtime, 'CreateContainer', {
      pod_sandbox_id: pod,
      config: { metadata: { name: 'ev', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
      sandbox_config: config,
    });
    await call(h.runtime, 'StartContainer', { container_id: id });
    await call(h.runtime, 'StopContainer', { container_id: id, timeout: '0' });
    await call(h.runtime, 'RemoveContainer', { container_id: id });

    const deadline = Date.now() + 20_000;
    const mine = (): ContainerEventResponse__Output[] => events.filter((e) => e.container_id === id);
    while (mine().length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    stream.cancel();
    expect(mine().map((e) => e.container_event_type)).toEqual([
      'CONTAINER_CREATED_EVENT',
      'CONTAINER_STARTED_EVENT',
      'CONTAINER_STOPPED_EVENT',
      'CONTAINER_DELETED_EVENT',
    ]);
    const started = mine()[1];
    expect(started.pod_sandbox_status?.id).toBe(pod);
    expect(started.containers_statuses.find((s) => s.id === id)?.state).toBe('CONTAINER_RUNNING');
    expect(BigInt(started.created_at)).toBeGreaterThan(0n);
    // the sandbox's own lifecycle is reported too
    expect(events.some((e) => e.container_id === pod && e.container_event_type === 'CONTAINER_STARTED_EVENT')).toBe(
      true,
    );

    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
  });
});

describe('Stream* RPCs', () => {
  it('return the same set as their List twins over many sandboxes', async () => {
    const ids: string[] = [];
    // host network keeps this about list plumbing, not CNI throughput
    for (let i = 0; i < 50; i++) {
      const config = podConfig(`many-${i}`, {
        labels: { group: 'many' },
        linux: { security_context: { namespace_options: { network: 'NODE' } } },
      });
      ids.push((await call(h.runtime, 'RunPodSandbox', { config })).pod_sandbox_id);
    }
    try {
      const filter = { label_selector: { group: 'many' } };
      const listed = (await call(h.runtime, 'ListPodSandbox', { filter })).items ?? [];
      const chunks = await collect(h.runtime.StreamPodSandboxes({ filter }));
      const streamed = chunks.flatMap((c) => c.pod_sandboxes);
      expect(streamed.map((s) => s.id).sort()).toEqual(listed.map((s) => s.id).sort());
      expect(streamed.map((s) => s.id).sort()).toEqual([...ids].sort());
      expect(streamed.find((s) => s.id === ids[0])).toEqual(listed.find((s) => s.id === ids[0]));

      const lc = (await call(h.runtime, 'ListContainers', {})).containers ?? [];
      const sc = (await collect(h.runtime.StreamContainers({}))).flatMap((c) => c.containers);
      expect(sc.map((c) => c.id).sort()).toEqual(lc.map((c) => c.id).sort());
    } finally {
      for (const id of ids) {
        await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
        await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
      }
    }
  });
});

describe('runtime configuration RPCs', () => {
  it('reports the cgroup driver Docker uses', async () => {
    const { docker } = await import('./harness');
    const info = (await docker.info()) as { CgroupDriver: string };
    const rc = await call(h.runtime, 'RuntimeConfig', {});
    expect(rc.linux?.cgroup_driver).toBe(info.CgroupDriver === 'systemd' ? 'SYSTEMD' : 'CGROUPFS');
  });

  it('accepts a pod CIDR and refuses garbage', async () => {
    await expect(
      call(h.runtime, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: h.cni.subnet } } }),
    ).resolves.toEqual({});
    expect(
      (
        await codeOf(
          call(h.runtime, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: 'nonsense' } } }),
        )
      ).code,
    ).toBe(status.INVALID_ARGUMENT);
  });

  it('explains why checkpointing is unavailable', async () => {
    const r = await codeOf(call(h.runtime, 'CheckpointContainer', { container_id: 'abc' }));
    expect(r.code).toBe(status.UNIMPLEMENTED);
    expect(r.details).toMatch(/CRIU|experimental/);
  });
});

describe('Prometheus metrics', () => {
  it('serves valid text with counters that move', async () => {
    const before = metricValue(await scrapeMetrics(h), 'crishim_rpc_requests_total', { method: 'Version', code: 'OK' });
    await call(h.runtime, 'Version', {});
    await call(h.runtime, 'Version', {});
    await codeOf(call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: 'abcdef' }));
    const text = await scrapeMetrics(h);
    expect(metricValue(text, 'crishim_rpc_requests_total', { method: 'Version', code: 'OK' })).toBe(before + 2);
    expect(
      metricValue(text, 'crishim_rpc_errors_total', { method: 'PodSandboxStatus', code: 'NOT_FOUND' }),
    ).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^# TYPE crishim_rpc_duration_seconds histogram$/m);
    expect(text).toMatch(/^crishim_docker_request_duration_seconds_count\{.*route="\/containers\/json".*\} \d+/m);
    expect(text).toMatch(/^# TYPE crishim_pod_sandboxes gauge$/m);
    // every sample line parses as "<name>{labels} <number>"
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? (-?[0-9.e+-]+|[Nn]a[Nn]|[+-]Inf)$/);
    }
  });
});
