import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parseProcCgroup } from '../../src/stats/cgroup-path';
import { closeCgroupFiles } from '../../src/stats/files';
import {
  findPodCgroup,
  OWN_CGROUP_RECHECK_MS,
  pruneOwnCgroups,
  readPodUsage,
  sumUsage,
  type OwnCgroupMemo,
} from '../../src/stats/pod-usage';
import { createRateTracker } from '../../src/stats/rate';
import type { Sample } from '../../src/stats/sample';

const cgOf = (p: string) => parseProcCgroup(`4:memory:${p}\n2:cpuacct:${p}\n`);
const member = (
  id: string,
  cg: string | undefined,
  usage: Sample['usage'],
  extra: Partial<NonNullable<Sample['facts']>> = {},
): Sample => ({
  id,
  timestamp: '1',
  usage,
  facts: { pid: cg ? 1 : 0, cgroup: cg ? cgOf(cg) : undefined, cgroupParent: '', hostNetwork: false, ...extra },
});

describe('sumUsage', () => {
  it('adds each field over the readings that have it; a field none has stays unset', () => {
    const s = sumUsage([{ cpuUsageNanos: 5n, memoryUsage: 10, pids: 1 }, { cpuUsageNanos: 7n, workingSet: 3 }, {}]);
    expect(s).toEqual({
      cpuUsageNanos: 12n,
      memoryUsage: 10,
      workingSet: 3,
      rss: undefined,
      pageFaults: undefined,
      majorPageFaults: undefined,
      pids: 1,
    });
  });
});

describe('pod totals', () => {
  let root: string;
  beforeEach(async () => {
    root = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-pod-usage-'));
  });
  afterEach(async () => {
    closeCgroupFiles();
    await fsp.rm(root, { recursive: true, force: true });
  });
  const mkdirs = (...dirs: string[]): Promise<unknown> =>
    Promise.all(dirs.map((d) => fsp.mkdir(path.join(root, 'memory', d), { recursive: true })));

  it("the pod cgroup: a CgroupParent that holds this pod's containers and nothing else", async () => {
    await mkdirs('/pod1/sb', '/pod1/c1');
    const pause = member('sb', '/pod1/sb', {}, { cgroupParent: '/pod1' });
    expect((await findPodCgroup(pause, [member('c1', '/pod1/c1', {})], root))?.paths.get('memory')).toBe('/pod1');
    // a stranger under the same parent: the parent is not the pod's alone
    await mkdirs('/pod1/other');
    expect(await findPodCgroup(pause, [member('c1', '/pod1/c1', {})], root)).toBeUndefined();
  });

  it('lists the parent once per OWN_CGROUP_RECHECK_MS for the same members, at once for new ones', async () => {
    await mkdirs('/pod3/sb', '/pod3/c1');
    const pause = member('sb', '/pod3/sb', {}, { cgroupParent: '/pod3' });
    const memo: OwnCgroupMemo = new Map();
    const c1 = [member('c1', '/pod3/c1', {})];
    expect(findPodCgroup(pause, c1, root, memo, 1000)?.paths.get('memory')).toBe('/pod3');
    await mkdirs('/pod3/stranger');
    // the answer stands: the directory is not listed again within the recheck time
    expect(findPodCgroup(pause, c1, root, memo, 1000 + OWN_CGROUP_RECHECK_MS - 1)).toBeDefined();
    // a new member set is a new question, listed at once
    expect(findPodCgroup(pause, [...c1, member('c2', '/pod3/c2', {})], root, memo, 1001)).toBeUndefined();
    // past the recheck time the stranger is seen
    expect(findPodCgroup(pause, c1, root, memo, 1000 + OWN_CGROUP_RECHECK_MS)).toBeUndefined();
    pruneOwnCgroups(memo, 1001 + 2 * OWN_CGROUP_RECHECK_MS);
    expect(memo.size).toBe(0);
  });

  it('no pod cgroup without a CgroupParent, or with a member elsewhere', async () => {
    await mkdirs('/docker/sb', '/docker/c1', '/pod2/sb');
    expect(await findPodCgroup(member('sb', '/docker/sb', {}), [member('c1', '/docker/c1', {})], root)).toBeUndefined();
    const pause = member('sb', '/pod2/sb', {}, { cgroupParent: '/pod2' });
    expect(await findPodCgroup(pause, [member('c1', '/docker/c1', {})], root)).toBeUndefined();
  });

  it('sums pause and members, rates included, and reads no network for a host-network pod', async () => {
    const src = { rates: createRateTracker(), cgroupRoot: root, procRoot: path.join(root, 'proc') };
    const pause = {
      ...member('sb', '/docker/sb', { cpuUsageNanos: 1n, memoryUsage: 5 }, { hostNetwork: true }),
      nanoCores: 10,
    };
    const c1 = { ...member('c1', '/docker/c1', { cpuUsageNanos: 2n, memoryUsage: 7 }), nanoCores: 20 };
    const pod = await readPodUsage(src, { id: 'sb', running: true }, pause, [c1]);
    expect(pod.source).toBe('sum');
    expect(pod.usage.cpuUsageNanos).toBe(3n);
    expect(pod.usage.memoryUsage).toBe(12);
    expect(pod.nanoCores).toBe(30);
    expect(pod.network).toBeUndefined();
  });
});
