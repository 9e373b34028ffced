import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import type * as Docker from '../../src/docker/types';
import { FakeEngine } from '../support/fake-engine';
import { createLogger } from '../../src/logging/logger';
import { createStatsCollector } from '../../src/stats/collector';
import { closeCgroupFiles } from '../../src/stats/files';

/** The collector's synchronous pass: targets carrying the state view's inspect answer. */

async function tree(root: string, files: Record<string, string>): Promise<void> {
  for (const [f, content] of Object.entries(files)) {
    await fsp.mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await fsp.writeFile(path.join(root, f), content);
  }
}
const cgroupFiles = (cg: string, cpu: number, mem: number, pids: number): Record<string, string> => ({
  [`cpuacct${cg}/cpuacct.usage`]: `${cpu}\n`,
  [`memory${cg}/memory.usage_in_bytes`]: `${mem}\n`,
  [`memory${cg}/memory.limit_in_bytes`]: '65536000\n',
  [`memory${cg}/memory.stat`]: `total_rss ${mem / 2}\ntotal_inactive_file 100\ntotal_pgfault 1\ntotal_pgmajfault 0\n`,
  [`pids${cg}/pids.current`]: `${pids}\n`,
});
const procCgroup = (cg: string): string => `8:pids:${cg}\n4:memory:${cg}\n2:cpuacct:${cg}\n`;
const info = (id: string, pid: number, startedAt = '2026-11-24T10:00:00Z'): Docker.ContainerInspectInfo =>
  ({
    Id: id,
    State: { Running: pid > 0, Pid: pid, StartedAt: startedAt },
    HostConfig: {},
    GraphDriver: { Data: {} },
  }) as unknown as Docker.ContainerInspectInfo;

const SB = 's'.repeat(64);
const C1 = 'a'.repeat(64);
const logger = createLogger('error', 'json');
let dir: string;
let cgRoot: string;
let proc: string;
beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-stats-sync-'));
  cgRoot = path.join(dir, 'cgroup');
  proc = path.join(dir, 'proc');
  await tree(cgRoot, { ...cgroupFiles(`/docker/${SB}`, 10, 1000, 1), ...cgroupFiles(`/docker/${C1}`, 20, 4000, 3) });
  await tree(proc, { '101/cgroup': procCgroup(`/docker/${SB}`), '102/cgroup': procCgroup(`/docker/${C1}`) });
});
afterEach(async () => {
  closeCgroupFiles();
  await fsp.rm(dir, { recursive: true, force: true });
});

function collector(reuseMs = 0): { col: ReturnType<typeof createStatsCollector>; viewGets: string[] } {
  const viewGets: string[] = [];
  const view = {
    get: async (id: string) => {
      viewGets.push(id);
      return undefined;
    },
  };
  const col = createStatsCollector(new FakeEngine(), logger, {
    cgroupRoot: cgRoot,
    procRoot: proc,
    settleMs: 0,
    view,
    reuseMs,
  });
  return { col, viewGets };
}

describe('stats collector, synchronous pass', () => {
  it('reads from the target’s inspect answer, never looks it up, and its numbers move', async () => {
    const { col, viewGets } = collector();
    const target = { id: C1, running: true, info: info(C1, 102) };
    const [a] = await col.containers([target]);
    expect(a.usage).toMatchObject({ cpuUsageNanos: 20n, memoryUsage: 4000, memoryLimit: 65536000 });
    await tree(cgRoot, { [`memory/docker/${C1}/memory.usage_in_bytes`]: '5000\n' });
    await new Promise((r) => setTimeout(r, 60));
    await tree(cgRoot, { [`cpuacct/docker/${C1}/cpuacct.usage`]: '60000020\n' });
    const [b] = await col.containers([target]);
    expect(b.usage.memoryUsage).toBe(5000);
    expect(b.nanoCores).toBeGreaterThan(0);
    expect(viewGets).toEqual([]);
  });

  it('a restarted container (new start time and pid) has its cgroup paths read again', async () => {
    const { col } = collector();
    await col.containers([{ id: C1, running: true, info: info(C1, 102) }]);
    await tree(cgRoot, cgroupFiles(`/docker/${C1}-new`, 5, 7000, 1));
    await tree(proc, { '202/cgroup': procCgroup(`/docker/${C1}-new`) });
    const [s] = await col.containers([{ id: C1, running: true, info: info(C1, 202, '2026-11-24T11:00:00Z') }]);
    expect(s.usage.memoryUsage).toBe(7000);
    expect(s.facts?.pid).toBe(202);
  });

  it('without an inspect answer it looks the container up (and a gone one reads as empty)', async () => {
    const { col, viewGets } = collector();
    const [s] = await col.containers([{ id: C1, running: true }]);
    expect(s.usage).toEqual({});
    expect(viewGets).toEqual([C1]);
  });

  it('pod totals count the processes of containers read for ListContainerStats (which has none)', async () => {
    const { col } = collector(500);
    const [c] = await col.containers([{ id: C1, running: true, info: info(C1, 102) }]);
    expect(c.usage.pids).toBeUndefined();
    // the same round: the container's sample is reused, its process count read for the pod
    const [pod] = await col.pods([{ sandbox: { id: SB, running: true, info: info(SB, 101) }, members: [c] }]);
    expect(pod.source).toBe('sum');
    expect(pod.usage.pids).toBe(4);
    expect(pod.usage.memoryUsage).toBe(5000);
  });

  it('a container that stopped within the reuse window is read again, not answered from the round’s sample', async () => {
    const { col } = collector(500);
    const [a] = await col.containers([{ id: C1, running: true, info: info(C1, 102) }]);
    expect(a.usage.memoryUsage).toBe(4000);
    const [b] = await col.containers([{ id: C1, running: false, info: info(C1, 0) }]);
    expect(b.usage).toEqual({});
  });
});
