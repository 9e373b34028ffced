import { createMetrics, dockerRoute } from '../../src/server/metrics';
import { status } from '@grpc/grpc-js';

describe('docker route labels', () => {
  it.each([
    ['/v1.41/containers/json?all=1', '/containers/json'],
    ['/containers/0123abcd/json', '/containers/{id}/json'],
    ['/containers/create?name=x', '/containers/create'],
    ['/images/registry.k8s.io/pause:3.10/json', '/images/{id}/json'],
    ['/images/sha256:abc', '/images/{id}'],
    ['/images/create?fromImage=busybox', '/images/create'],
    ['/exec/77/start', '/exec/{id}/start'],
  ])('%s -> %s', (path, route) => expect(dockerRoute(path)).toBe(route));
});

describe('rpc metrics', () => {
  it('counts requests and errors by code', async () => {
    const m = createMetrics();
    m.observeRpc('Version', status.OK, 0.001);
    m.observeRpc('PodSandboxStatus', status.NOT_FOUND, 0.002);
    const text = await m.registry.metrics();
    expect(text).toContain('crishim_rpc_requests_total{method="Version",code="OK"} 1');
    expect(text).toContain('crishim_rpc_errors_total{method="PodSandboxStatus",code="NOT_FOUND"} 1');
    expect(text).not.toContain('crishim_rpc_errors_total{method="Version"');
  });
});

describe('state gauges', () => {
  const sample = (text: string, name: string, state: string): string | undefined =>
    text
      .split('\n')
      .find((l) => l.startsWith(`${name}{state="${state}"}`))
      ?.split(' ')
      .pop();

  it('report both gauges from the first scrape, with one state read per scrape', async () => {
    const m = createMetrics();
    let reads = 0;
    m.setStateCollector(async () => {
      reads++;
      return {
        sandboxes: { SANDBOX_READY: reads, SANDBOX_NOTREADY: 1 },
        containers: { CONTAINER_RUNNING: 10 * reads },
      };
    });
    const first = await m.registry.metrics();
    expect(reads).toBe(1);
    expect(sample(first, 'crishim_pod_sandboxes', 'SANDBOX_READY')).toBe('1');
    expect(sample(first, 'crishim_pod_sandboxes', 'SANDBOX_NOTREADY')).toBe('1');
    expect(sample(first, 'crishim_containers', 'CONTAINER_RUNNING')).toBe('10');
    const second = await m.registry.metrics();
    expect(reads).toBe(2);
    // values of this scrape, not the previous one
    expect(sample(second, 'crishim_pod_sandboxes', 'SANDBOX_READY')).toBe('2');
    expect(sample(second, 'crishim_containers', 'CONTAINER_RUNNING')).toBe('20');
  });

  it('report the wait of the oldest prompt Docker call at each scrape', async () => {
    const m = createMetrics();
    const gauge = (text: string) =>
      text
        .split('\n')
        .find((l) => l.startsWith('crishim_docker_oldest_call_seconds '))
        ?.split(' ')
        .pop();
    expect(gauge(await m.registry.metrics())).toBe('0');
    let waitMs = 181_500;
    m.setDockerWait(() => waitMs);
    expect(gauge(await m.registry.metrics())).toBe('181.5');
    waitMs = 0;
    expect(gauge(await m.registry.metrics())).toBe('0');
  });

  it('drop states that no longer occur, and keep the last values when the read fails', async () => {
    const m = createMetrics();
    let counts: { sandboxes: Record<string, number>; containers: Record<string, number> } | undefined = {
      sandboxes: { SANDBOX_READY: 2 },
      containers: { CONTAINER_EXITED: 3 },
    };
    m.setStateCollector(async () => {
      if (!counts) throw new Error('docker is down');
      return counts;
    });
    await m.registry.metrics();
    counts = { sandboxes: { SANDBOX_NOTREADY: 1 }, containers: {} };
    const text = await m.registry.metrics();
    expect(sample(text, 'crishim_pod_sandboxes', 'SANDBOX_READY')).toBeUndefined();
    expect(sample(text, 'crishim_pod_sandboxes', 'SANDBOX_NOTREADY')).toBe('1');
    expect(sample(text, 'crishim_containers', 'CONTAINER_EXITED')).toBeUndefined();
    counts = undefined;
    expect(sample(await m.registry.metrics(), 'crishim_pod_sandboxes', 'SANDBOX_NOTREADY')).toBe('1');
  });
});
