import type { SandboxCheckpoint } from '../../src/checkpoint/store';
import { listContainers } from '../../src/container/list';
import { listSandboxes } from '../../src/sandbox/list';
import type { ServiceDeps } from '../../src/service-deps';
import type { ContainerInfo } from '../../src/state/store';
import { inspectInfo } from '../support/fake-engine';

const TYPE = 'io.kubernetes.docker.type';
const SANDBOX = 'io.kubernetes.sandbox.id';
const hex = (c: string): string => c.repeat(64);

const pause = (id: string, status: string): ContainerInfo =>
  inspectInfo({
    Id: id,
    Name: `/k8s_POD_web-${id[0]}_default_uid_0`,
    State: { Status: status, Running: status === 'running' },
    Config: { Image: 'pause', Labels: { [TYPE]: 'podsandbox', app: 'web' } },
  });
const app = (id: string, pod: string, status: string): ContainerInfo =>
  inspectInfo({
    Id: id,
    Name: `/k8s_app_web-${pod[0]}_default_uid_0`,
    State: { Status: status, Running: status === 'running' },
    Config: { Image: 'busybox', Labels: { [TYPE]: 'container', [SANDBOX]: pod } },
  });
const checkpoint = (name: string): SandboxCheckpoint => ({
  version: 'v1',
  name,
  namespace: 'default',
  data: { port_mappings: [], host_network: false },
  crishim: { sandbox_id: '', uid: 'u', attempt: 0, created_at: '1' },
  checksum: 0,
});

/**
 * The view and the checkpoint store hand out the same arrays until something changes (that is
 * their contract); these fakes do too, and the test swaps the arrays as a change would.
 */
function fakeDeps(): {
  deps: ServiceDeps;
  setView(c: ContainerInfo[]): void;
  setCheckpoints(ids: string[]): void;
} {
  let view: readonly ContainerInfo[] = [];
  let ids: readonly string[] = [];
  const deps = {
    state: { list: async () => view },
    checkpoints: { list: async () => ids, read: async (id: string) => checkpoint(`orphan-${id[0]}`) },
  } as unknown as ServiceDeps;
  return { deps, setView: (c) => (view = c), setCheckpoints: (c) => (ids = c) };
}

describe('List answers from the state view', () => {
  it('answers an unfiltered ListPodSandbox with the same array until the view or the checkpoints change', async () => {
    const f = fakeDeps();
    f.setView([pause(hex('a'), 'running'), app(hex('1'), hex('a'), 'running')]);
    f.setCheckpoints([hex('a')]);
    const first = await listSandboxes(f.deps, null);
    expect(first.map((s) => [s.id?.[0], s.state])).toEqual([['a', 'SANDBOX_READY']]);
    expect(await listSandboxes(f.deps, null)).toBe(first);
    // the kubelet's empty filter is no filter
    expect(await listSandboxes(f.deps, { id: '', state: null, label_selector: {} })).toBe(first);

    // a checkpoint whose pause container is gone: NOTREADY, in a new answer
    f.setCheckpoints([hex('a'), hex('b')]);
    const second = await listSandboxes(f.deps, null);
    expect(second.map((s) => [s.id?.[0], s.state, s.metadata?.name])).toEqual([
      ['a', 'SANDBOX_READY', 'web-a'],
      ['b', 'SANDBOX_NOTREADY', 'orphan-b'],
    ]);
    f.setView([pause(hex('a'), 'exited')]);
    expect((await listSandboxes(f.deps, null)).map((s) => s.state)).toEqual(['SANDBOX_NOTREADY', 'SANDBOX_NOTREADY']);
  });

  it('filters ListPodSandbox by id prefix, state and labels without touching the shared answer', async () => {
    const f = fakeDeps();
    f.setView([pause(hex('a'), 'running'), pause(hex('b'), 'exited')]);
    const all = await listSandboxes(f.deps, null);
    const ids = async (filter: Parameters<typeof listSandboxes>[1]): Promise<string[]> =>
      (await listSandboxes(f.deps, filter)).map((s) => s.id?.[0] ?? '');
    expect(await ids({ id: 'bb', state: null, label_selector: {} })).toEqual(['b']);
    expect(await ids({ id: '', state: { state: 'SANDBOX_READY' }, label_selector: {} })).toEqual(['a']);
    expect(await ids({ id: '', state: null, label_selector: { app: 'db' } })).toEqual([]);
    expect(await listSandboxes(f.deps, null)).toBe(all);
    expect(all.map((s) => s.id?.[0])).toEqual(['a', 'b']);
  });

  it('answers an unfiltered ListContainers with the same array until the view changes, and filters by pod', async () => {
    const f = fakeDeps();
    f.setView([pause(hex('a'), 'running'), app(hex('1'), hex('a'), 'running'), app(hex('2'), hex('b'), 'exited')]);
    const first = await listContainers(f.deps, null);
    expect(first.map((c) => [c.id?.[0], c.state])).toEqual([
      ['1', 'CONTAINER_RUNNING'],
      ['2', 'CONTAINER_EXITED'],
    ]);
    const empty = { id: '', pod_sandbox_id: '', state: null, label_selector: {} };
    expect(await listContainers(f.deps, empty)).toBe(first);
    expect((await listContainers(f.deps, { ...empty, pod_sandbox_id: hex('b') })).map((c) => c.id?.[0])).toEqual(['2']);
    f.setView([app(hex('1'), hex('a'), 'exited')]);
    expect((await listContainers(f.deps, null)).map((c) => [c.id?.[0], c.state])).toEqual([['1', 'CONTAINER_EXITED']]);
    expect(first).toHaveLength(2);
  });
});
