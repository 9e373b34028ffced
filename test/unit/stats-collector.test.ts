import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import type * as Docker from '../../src/docker/types';
import { DomainError } from '../../src/errors';
import { FakeEngine, inspectInfo } from '../support/fake-engine';
import { fdsOn } from '../support/fds';
import { createLogger } from '../../src/logging/logger';
import { createStatsCollector } from '../../src/stats/collector';
import { createLayerUsageCache, walkUsage } from '../../src/stats/writable-layer';
import { metricDescriptors, podMetrics } from '../../src/cri/metrics-cadvisor';
import { toPodStats, type PodView } from '../../src/cri/stats-convert';

async function tree(root: string, files: Record<string, string>): Promise<void> {
  for (const [f, content] of Object.entries(files)) {
    await fsp.mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await fsp.writeFile(path.join(root, f), content);
  }
}

interface FakeContainer {
  pid: number;
  cgroupParent?: string;
  upperDir?: string;
  hostNetwork?: boolean;
}

/** The shared fake, answering inspect from `containers` as they are when asked, and counting the calls. */
function fakeDocker(containers: Map<string, FakeContainer>): { docker: FakeEngine; inspects: string[] } {
  const inspects: string[] = [];
  const docker = new FakeEngine();
  docker.inspectContainer = async (id: string): Promise<Docker.ContainerInspectInfo> => {
    inspects.push(id);
    const c = containers.get(id);
    if (!c) throw new DomainError('not-found', `inspect container ${id}: no such container`);
    return inspectInfo({
      Id: id,
      State: { Running: c.pid > 0, Pid: c.pid },
      HostConfig: { CgroupParent: c.cgroupParent ?? '', NetworkMode: c.hostNetwork ? 'host' : 'none' },
      GraphDriver: { Name: 'overlay2', Data: c.upperDir ? { UpperDir: c.upperDir } : {} },
    });
  };
  return { docker, inspects };
}

const NETDEV = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
  eth0:  5000     20    1    0    0     0          0         0    3000     10    0    0    0     0       0          0
`;

/** cgroup v1 files of one cgroup (cpuacct + memory + pids). */
function v1(
  cg: string,
  cpu: number,
  usage: number,
  opts: { limit?: number; pids?: number } = {},
): Record<string, string> {
  return {
    [`cpuacct${cg}/cpuacct.usage`]: `${cpu}\n`,
    [`memory${cg}/memory.usage_in_bytes`]: `${usage}\n`,
    [`memory${cg}/memory.limit_in_bytes`]: `${opts.limit ?? '9223372036854771712'}\n`,
    [`memory${cg}/memory.stat`]: `total_rss ${usage / 2}\ntotal_inactive_file 100\ntotal_pgfault 1\ntotal_pgmajfault 0\n`,
    ...(opts.pids !== undefined ? { [`pids${cg}/pids.current`]: `${opts.pids}\n` } : {}),
  };
}
const procCgroup = (cg: string): string => `8:pids:${cg}\n4:memory:${cg}\n2:cpuacct:${cg}\n`;

const logger = createLogger('error', 'json');

let dir: string;
let cgRoot: string;
let proc: string;
beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-stats-col-'));
  cgRoot = path.join(dir, 'cgroup');
  proc = path.join(dir, 'proc');
});
afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

const SB = 's'.repeat(64);
const C1 = 'a'.repeat(64);
const C2 = 'b'.repeat(64);

/**
 * A pod (pause SB on the host network, container C1) under `parent`, beside another pod's
 * container: Docker's default parent, or one given to the pod (`cgroupParent`) yet shared.
 */
async function podBesideAnother(
  parent: string,
  cgroupParent?: string,
): Promise<ReturnType<typeof createStatsCollector>> {
  await tree(cgRoot, {
    ...v1(parent, 1e9, 1e9),
    ...v1(`${parent}/${SB}`, 1_000, 10_000, { pids: 1 }),
    ...v1(`${parent}/${C1}`, 8_000, 40_000, { pids: 3 }),
    ...v1(`${parent}/${'c'.repeat(64)}`, 1, 1),
  });
  await tree(proc, { '100/cgroup': procCgroup(`${parent}/${SB}`), '101/cgroup': procCgroup(`${parent}/${C1}`) });
  const { docker } = fakeDocker(
    new Map([
      [SB, { pid: 100, hostNetwork: true, cgroupParent }],
      [C1, { pid: 101, cgroupParent }],
    ]),
  );
  return createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0 });
}

/** A pod (SB, pid 100) and its container (C1, pid 101) under a cgroup parent of their own, /pod1, with `pod` as its files. */
async function podInOwnCgroup(
  pod: { limit?: number; pids?: number },
  procFiles: Record<string, string> = {},
): Promise<ReturnType<typeof createStatsCollector>> {
  await tree(cgRoot, {
    ...v1('/pod1', 9_000, 50_000, pod),
    ...v1(`/pod1/${SB}`, 1_000, 10_000, { pids: 1 }),
    ...v1(`/pod1/${C1}`, 8_000, 40_000, { pids: 3 }),
  });
  await tree(proc, { '100/cgroup': procCgroup(`/pod1/${SB}`), '101/cgroup': procCgroup(`/pod1/${C1}`), ...procFiles });
  const { docker } = fakeDocker(
    new Map([
      [SB, { pid: 100, cgroupParent: '/pod1' }],
      [C1, { pid: 101, cgroupParent: '/pod1' }],
    ]),
  );
  return createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0 });
}

describe('stats collector', () => {
  it('inspects each container once, then reads only files; rates from the second reading on', async () => {
    await tree(cgRoot, { ...v1(`/docker/${C1}`, 1_000_000, 1000, { pids: 2 }), ...v1(`/docker/${C2}`, 0, 2000) });
    await tree(proc, { '101/cgroup': procCgroup(`/docker/${C1}`), '102/cgroup': procCgroup(`/docker/${C2}`) });
    const { docker, inspects } = fakeDocker(
      new Map([
        [C1, { pid: 101 }],
        [C2, { pid: 102 }],
      ]),
    );
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0 });
    const targets = [
      { id: C1, running: true },
      { id: C2, running: true },
    ];
    const first = await col.containers(targets);
    expect(first.map((s) => s.usage.memoryUsage)).toEqual([1000, 2000]);
    // ListContainerStats reports no process counts: not read for containers (pod totals read them)
    expect(first[0].usage.pids).toBeUndefined();
    expect(first[0].nanoCores).toBeUndefined();
    await new Promise((r) => setTimeout(r, 120));
    await tree(cgRoot, { [`cpuacct/docker/${C1}/cpuacct.usage`]: '60000000\n' });
    const second = await col.containers(targets);
    expect(second[0].nanoCores).toBeGreaterThan(0);
    expect(second[1].nanoCores).toBe(0);
    expect(inspects.sort()).toEqual([C1, C2]);
  });

  it('takes a short second reading for containers seen for the first time', async () => {
    await tree(cgRoot, v1(`/docker/${C1}`, 5, 1000));
    await tree(proc, { '101/cgroup': procCgroup(`/docker/${C1}`) });
    const { docker } = fakeDocker(new Map([[C1, { pid: 101 }]]));
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 60 });
    const [s] = await col.containers([{ id: C1, running: true }]);
    expect(s.nanoCores).toBe(0);
  });

  it('re-inspects a container whose process is gone (restarted), not one that did not change', async () => {
    await tree(cgRoot, v1(`/docker/${C1}`, 5, 1000));
    await tree(proc, { '101/cgroup': procCgroup(`/docker/${C1}`) });
    const containers = new Map([[C1, { pid: 101 }]]);
    const { docker, inspects } = fakeDocker(containers);
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0 });
    await col.containers([{ id: C1, running: true }]);
    await col.containers([{ id: C1, running: true }]);
    expect(inspects).toHaveLength(1);
    await fsp.rm(path.join(proc, '101'), { recursive: true });
    await tree(proc, { '202/cgroup': procCgroup(`/docker/${C1}`) });
    containers.set(C1, { pid: 202 });
    const [s] = await col.containers([{ id: C1, running: true }]);
    expect(inspects).toHaveLength(2);
    expect(s.facts?.pid).toBe(202);
  });

  it('a stopped container has zero usage but still its writable layer', async () => {
    const upper = path.join(dir, 'upper');
    await tree(upper, { 'etc/hello': 'x'.repeat(10_000), 'tmp/a/b': 'y' });
    const { docker } = fakeDocker(new Map([[C1, { pid: 0, upperDir: upper }]]));
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0 });
    const [first] = await col.containers([{ id: C1, running: false }]);
    expect(first.usage).toEqual({});
    // the walk is never waited for: the first call only starts it
    expect(first.writable).toBeUndefined();
    let s = first;
    for (let i = 0; i < 100 && !s.writable; i++) {
      await new Promise((r) => setTimeout(r, 10));
      [s] = await col.containers([{ id: C1, running: false }]);
    }
    expect(s.writable?.inodes).toBe(5); // etc, etc/hello, tmp, tmp/a, tmp/a/b
    expect(s.writable?.bytes).toBeGreaterThanOrEqual(10_000);
  });

  it('a pod with its own cgroup parent reads the pod cgroup; network from the pause pid', async () => {
    // pids.current counts every task at or under a cgroup: here one more than its leaves hold
    const col = await podInOwnCgroup({ limit: 100_000, pids: 5 }, { '100/net/dev': NETDEV });
    const members = await col.containers([{ id: C1, running: true }]);
    const pod = await col.pod({ id: SB, running: true }, members);
    expect(pod.source).toBe('pod-cgroup');
    expect(pod.usage.memoryUsage).toBe(50_000);
    expect(pod.usage.memoryLimit).toBe(100_000);
    expect(pod.usage.pids).toBe(5); // the pod cgroup's, in one read
    expect(pod.network).toEqual([{ name: 'eth0', rxBytes: 5000, rxErrors: 1, txBytes: 3000, txErrors: 0 }]);
    const stats = toPodStats(
      { sb: { id: SB, metadata: { name: 'p', namespace: 'ns' } }, pod, members: [] } as PodView,
      '/var/lib/docker',
    );
    expect(stats.linux?.memory?.available_bytes?.value).toBe(100_000 - (50_000 - 100));
  });

  it("a pod cgroup without the pids controller: its process count is its pause's and members' summed", async () => {
    const col = await podInOwnCgroup({});
    const pod = await col.pod({ id: SB, running: true }, await col.containers([{ id: C1, running: true }]));
    expect(pod.source).toBe('pod-cgroup');
    expect(pod.usage.pids).toBe(4);
  });

  it('a pod whose cgroup parent it shares with another is the sum, its pause read in full after all', async () => {
    const col = await podBesideAnother('/shared', '/shared');
    const members = await col.containers([{ id: C1, running: true }]);
    const first = await col.pod({ id: SB, running: true }, members);
    expect(first.source).toBe('sum');
    expect(first.usage.memoryUsage).toBe(50_000);
    expect(first.usage.cpuUsageNanos).toBe(9_000n);
    expect(first.usage.workingSet).toBe(50_000 - 200);
    expect(first.usage.pids).toBe(4);
    // the pause's CPU rate is tracked on this path too: only its counter moves (past the rate's 50 ms floor)
    await new Promise((r) => setTimeout(r, 60));
    await tree(cgRoot, { [`cpuacct/shared/${SB}/cpuacct.usage`]: '1000001000\n' });
    const again = await col.pod({ id: SB, running: true }, await col.containers([{ id: C1, running: true }]));
    expect(again.nanoCores).toBeGreaterThan(0);
  });

  it("lets a pod's kept net/dev go (it holds the netns) once the pod stops or is gone", async () => {
    await tree(cgRoot, v1(`/docker/${SB}`, 1_000, 10_000, { pids: 1 }));
    await tree(proc, { '100/cgroup': procCgroup(`/docker/${SB}`), '100/net/dev': NETDEV });
    const { docker } = fakeDocker(new Map([[SB, { pid: 100 }]]));
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0 });
    const netDev = path.join(proc, '100', 'net', 'dev');
    const running = await col.pods([{ sandbox: { id: SB, running: true }, members: [] }]);
    expect(running[0].network).toHaveLength(1);
    expect(await fdsOn(netDev)).toBe(1);
    await col.pods([{ sandbox: { id: SB, running: true }, members: [] }]);
    expect(await fdsOn(netDev)).toBe(1); // kept, not opened again
    await col.pods([{ sandbox: { id: SB, running: false }, members: [] }]);
    expect(await fdsOn(netDev)).toBe(0);
    await col.pods([{ sandbox: { id: SB, running: true }, members: [] }]);
    expect(await fdsOn(netDev)).toBe(1);
    col.retain(new Set(), 'sandbox');
    expect(await fdsOn(netDev)).toBe(0);
  });

  it('closes the cgroup files it keeps open once their container stops or goes, its pod cgroup with the pause', async () => {
    const col = await podInOwnCgroup({ pids: 99 });
    const appStat = path.join(cgRoot, 'memory', 'pod1', C1, 'memory.stat');
    const appCpu = path.join(cgRoot, 'cpuacct', 'pod1', C1, 'cpuacct.usage');
    const podStat = path.join(cgRoot, 'memory', 'pod1', 'memory.stat');
    const round = async (appRunning: boolean, podRunning = true): Promise<void> => {
      const members = await col.containers([{ id: C1, running: appRunning }]);
      await col.pods([{ sandbox: { id: SB, running: podRunning }, members }]);
    };
    await round(true);
    expect([await fdsOn(appStat), await fdsOn(appCpu), await fdsOn(podStat)]).toEqual([1, 1, 1]);
    await round(false);
    expect([await fdsOn(appStat), await fdsOn(appCpu), await fdsOn(podStat)]).toEqual([0, 0, 1]);
    // started again: opened again
    await round(true);
    expect([await fdsOn(appStat), await fdsOn(podStat)]).toEqual([1, 1]);
    col.retain(new Set(), 'container');
    expect([await fdsOn(appStat), await fdsOn(podStat)]).toEqual([0, 1]);
    col.retain(new Set(), 'sandbox');
    expect(await fdsOn(podStat)).toBe(0);
  });

  it('forgets a container sampled again since a retain, when the next retain passes the same set', async () => {
    const col = await podInOwnCgroup({ pids: 99 });
    const appStat = path.join(cgRoot, 'memory', 'pod1', C1, 'memory.stat');
    const none = new Set<string>();
    await col.containers([{ id: C1, running: true }]);
    col.retain(none, 'container');
    expect(await fdsOn(appStat)).toBe(0);
    // the same set object again, after C1 came back: still not kept
    await col.containers([{ id: C1, running: true }]);
    expect(await fdsOn(appStat)).toBe(1);
    col.retain(none, 'container');
    expect(await fdsOn(appStat)).toBe(0);
    // and with it in the set, kept through repeated retains
    const withC1 = new Set([C1]);
    await col.containers([{ id: C1, running: true }]);
    col.retain(withC1, 'container');
    col.retain(withC1, 'container');
    expect(await fdsOn(appStat)).toBe(1);
  });

  it("a pod under Docker's shared parent is the sum of its containers, pause included", async () => {
    const col = await podBesideAnother('/docker');
    const members = await col.containers([{ id: C1, running: true }]);
    const pod = await col.pod({ id: SB, running: true }, members);
    expect(pod.source).toBe('sum');
    expect(pod.usage.memoryUsage).toBe(50_000);
    expect(pod.usage.cpuUsageNanos).toBe(9_000n);
    expect(pod.usage.pids).toBe(4);
    // host network: the pause's netns is the host's, not the pod's
    expect(pod.network).toBeUndefined();
  });

  it('many pods at once: each gets its own pause and members, in order; new ones a CPU rate', async () => {
    const SB2 = 't'.repeat(64);
    await tree(cgRoot, {
      ...v1(`/docker/${SB}`, 1_000, 10_000, { pids: 1 }),
      ...v1(`/docker/${SB2}`, 2_000, 20_000, { pids: 1 }),
      ...v1(`/docker/${C1}`, 8_000, 40_000, { pids: 3 }),
    });
    await tree(proc, {
      '100/cgroup': procCgroup(`/docker/${SB}`),
      '200/cgroup': procCgroup(`/docker/${SB2}`),
      '101/cgroup': procCgroup(`/docker/${C1}`),
    });
    const { docker } = fakeDocker(
      new Map([
        [SB, { pid: 100, hostNetwork: true }],
        [SB2, { pid: 200, hostNetwork: true }],
        [C1, { pid: 101 }],
      ]),
    );
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 80 });
    const members = await col.containers([{ id: C1, running: true }]);
    const [a, b] = await col.pods([
      { sandbox: { id: SB, running: true }, members },
      { sandbox: { id: SB2, running: true }, members: [] },
    ]);
    expect(a.usage.memoryUsage).toBe(50_000);
    expect(b.usage.memoryUsage).toBe(20_000);
    expect(a.nanoCores).toBe(0);
    expect(b.nanoCores).toBe(0);
  });

  it('a sandbox Docker does not know (checkpoint only) is asked about once, and reads as empty', async () => {
    const { docker, inspects } = fakeDocker(new Map());
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0 });
    const a = await col.pod({ id: SB, running: false }, []);
    await col.pod({ id: SB, running: false }, []);
    expect(a.usage.memoryUsage).toBeUndefined();
    expect(inspects).toEqual([SB]);
  });
});

describe('writable layer walk', () => {
  it('answers from the cache and refreshes a stale entry behind the answer', async () => {
    let walks = 0;
    const walk = async (): Promise<{ bytes: number; inodes: number; truncated: boolean }> => ({
      bytes: ++walks,
      inodes: 1,
      truncated: false,
    });
    const cache = createLayerUsageCache({ ttlMs: 0, walk });
    expect((await cache.get('c', '/x')).bytes).toBe(1);
    // stale: the old value at once, a new walk behind it
    expect((await cache.get('c', '/x')).bytes).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect((await cache.get('c', '/x')).bytes).toBe(2);
  });

  it('stops at its entry bound and says so', async () => {
    await tree(dir, Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`w/d${i}/f`, 'z'])));
    const u = await walkUsage(path.join(dir, 'w'), { maxEntries: 10, maxMs: 10_000 });
    expect(u.truncated).toBe(true);
    expect((await walkUsage(path.join(dir, 'w'), { maxEntries: 1000, maxMs: 10_000 })).inodes).toBe(60);
  });
});

describe('cAdvisor metrics', () => {
  it('every metric has as many label values as its descriptor has keys', () => {
    const keys = new Map(metricDescriptors().map((d) => [d.name ?? '', d.label_keys ?? []]));
    const usage = {
      cpuUsageNanos: 3_500_000_000n,
      memoryUsage: 10,
      workingSet: 8,
      rss: 4,
      pageFaults: 1,
      majorPageFaults: 0,
      memoryLimit: 100,
      pids: 2,
    };
    const view = {
      sb: { id: SB, metadata: { name: 'p', namespace: 'ns', uid: 'u', attempt: 0 } },
      pod: {
        timestamp: '1',
        usage,
        source: 'sum',
        network: [{ name: 'eth0', rxBytes: 1, rxErrors: 0, txBytes: 2, txErrors: 0 }],
      },
      members: [
        {
          c: { id: C1, metadata: { name: 'app', attempt: 0 }, image: { image: 'img' } },
          s: { id: C1, timestamp: '1', usage, writable: { bytes: 4096, inodes: 3 } },
        },
      ],
    } as PodView;
    const m = podMetrics(view, '/var/lib/docker');
    const all = [...(m.metrics ?? []), ...(m.container_metrics ?? []).flatMap((c) => c.metrics ?? [])];
    expect(all.length).toBeGreaterThan(10);
    for (const x of all) expect(x.label_values?.length).toBe(keys.get(x.name ?? '')?.length);
    const cpu = m.container_metrics?.[0].metrics?.find((x) => x.name === 'container_cpu_usage_seconds_total');
    expect(cpu?.value?.value).toBe(3);
    expect(cpu?.label_values?.slice(0, 3)).toEqual(['app', C1, 'img']);
    expect(m.metrics?.find((x) => x.name === 'container_network_transmit_bytes_total')?.label_values).toEqual([
      'POD',
      SB,
      '',
      'ns',
      'p',
      'eth0',
    ]);
    // pod totals are container="" as in cAdvisor, so per-container sums do not count them
    expect(m.metrics?.find((x) => x.name === 'container_memory_working_set_bytes')?.label_values?.[0]).toBe('');
  });
});

describe('stats collector over the state view', () => {
  it('asks the view, never Docker, and reads a container’s cgroup paths once per start of its process', async () => {
    const containers = new Map([[C1, { pid: 101 }]]);
    const { docker, inspects } = fakeDocker(containers);
    let startedAt = '2026-11-23T10:00:00Z';
    const viewGets: string[] = [];
    const view = {
      get: async (id: string) => {
        viewGets.push(id);
        const c = containers.get(id);
        return (
          c &&
          ({
            Id: id,
            State: { Running: c.pid > 0, Pid: c.pid, StartedAt: startedAt },
            HostConfig: {},
            GraphDriver: { Data: {} },
          } as unknown as Docker.ContainerInspectInfo)
        );
      },
    };
    await tree(cgRoot, v1(`/docker/${C1}`, 5, 1000));
    await tree(proc, { '101/cgroup': procCgroup(`/docker/${C1}`) });
    const procFile = path.join(proc, '101', 'cgroup');
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0, view });
    const [a] = await col.containers([{ id: C1, running: true }]);
    expect(a.usage.cpuUsageNanos).toBeDefined();
    // the path is remembered: a vanished /proc entry does not matter while the process start is the same
    await fsp.rm(procFile);
    const [b] = await col.containers([{ id: C1, running: true }]);
    expect(b.usage.cpuUsageNanos).toBeDefined();
    // a restart (new StartedAt) makes it look again
    startedAt = '2026-11-23T11:00:00Z';
    const [c] = await col.containers([{ id: C1, running: true }]);
    expect(c.usage.cpuUsageNanos).toBeUndefined();
    expect(inspects).toEqual([]);
    expect(viewGets.length).toBe(3);
  });
});

describe('stats collector sample reuse', () => {
  it('reuses a container sampled within reuseMs (a stats round), and reads again after it', async () => {
    await tree(cgRoot, v1(`/docker/${C1}`, 5, 1000));
    await tree(proc, { '101/cgroup': procCgroup(`/docker/${C1}`) });
    const { docker } = fakeDocker(new Map([[C1, { pid: 101 }]]));
    const col = createStatsCollector(docker, logger, { cgroupRoot: cgRoot, procRoot: proc, settleMs: 0, reuseMs: 300 });
    const [a] = await col.containers([{ id: C1, running: true }]);
    await tree(cgRoot, { [`memory/docker/${C1}/memory.usage_in_bytes`]: '2000\n' });
    const [b] = await col.containers([{ id: C1, running: true }]);
    expect(b.usage.memoryUsage).toBe(a.usage.memoryUsage);
    await new Promise((r) => setTimeout(r, 350));
    const [c] = await col.containers([{ id: C1, running: true }]);
    expect(c.usage.memoryUsage).toBe(2000);
  });
});
