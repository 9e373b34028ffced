import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  cgroupDirs,
  childCgroups,
  controllerDirSync,
  keyPath,
  parentCgroup,
  parseProcCgroup,
} from '../../src/stats/cgroup-path';
import { readV1Usage } from '../../src/stats/cgroup-v1';
import { readV2Usage } from '../../src/stats/cgroup-v2';
import { readCgroupUsage } from '../../src/stats/cgroup';

async function tree(root: string, files: Record<string, string>): Promise<void> {
  for (const [f, content] of Object.entries(files)) {
    await fsp.mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await fsp.writeFile(path.join(root, f), content);
  }
}

let root: string;
beforeEach(async () => {
  root = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-stats-cg-'));
});
afterEach(() => fsp.rm(root, { recursive: true, force: true }));

const V1_UNLIMITED = '9223372036854771712\n';

describe('/proc/<pid>/cgroup', () => {
  it('v1 cgroupfs: every controller, co-mounted ones split, named hierarchies without their prefix', () => {
    const cg = parseProcCgroup(
      '9:name=systemd:/docker/c1\n8:pids:/docker/c1\n4:memory:/docker/c1\n2:cpu,cpuacct:/docker/c1\n0::/\n',
    );
    expect(cg.version).toBe(1);
    expect([...cg.paths.keys()].sort()).toEqual(['cpu', 'cpuacct', 'memory', 'pids', 'systemd']);
    expect(keyPath(cg)).toBe('/docker/c1');
  });
  it('v1 systemd driver under a pod slice', () => {
    const p = '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice/docker-c1.scope';
    const cg = parseProcCgroup(`4:memory:${p}\n3:cpuacct:${p}\n`);
    expect(keyPath(parentCgroup(cg))).toBe('/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice');
  });
  it('v2: the unified line only', () => {
    const cg = parseProcCgroup('0::/system.slice/docker-c1.scope\n');
    expect(cg.version).toBe(2);
    expect(keyPath(cg)).toBe('/system.slice/docker-c1.scope');
    expect(keyPath(parentCgroup(cg))).toBe('/system.slice');
  });
  it('one parent object per cgroup object, so what is derived from it is worked out once', () => {
    const cg = parseProcCgroup('4:memory:/pod1/c1\n');
    expect(parentCgroup(cg)).toBe(parentCgroup(cg));
    // an equal but distinct cgroup object (a restarted container's) gets its own
    expect(parentCgroup(parseProcCgroup('4:memory:/pod1/c1\n'))).not.toBe(parentCgroup(cg));
  });
});

describe('the directories of a cgroup (what closing its kept files looks in)', () => {
  it('v1: one per hierarchy, a co-mounted cpu,cpuacct once', async () => {
    await fsp.mkdir(path.join(root, 'cpu,cpuacct'), { recursive: true });
    const cg = parseProcCgroup('8:pids:/docker/c1\n4:memory:/docker/c1\n2:cpu,cpuacct:/docker/c1\n');
    expect([...cgroupDirs(cg, root)].sort()).toEqual(
      ['cpu,cpuacct/docker/c1', 'memory/docker/c1', 'pids/docker/c1'].map((d) => path.join(root, d)),
    );
  });
  it('v2: the unified directory alone', () => {
    const cg = parseProcCgroup('0::/kubepods.slice/pod1.slice/docker-c1.scope\n');
    expect([...cgroupDirs(cg, root)]).toEqual([path.join(root, 'kubepods.slice/pod1.slice/docker-c1.scope')]);
  });
});

describe('file names kept per cgroup object', () => {
  it.each([
    ['v1', '4:memory:/pod1/c1\n3:cpuacct:/pod1/c1\n', 'memory/pod1/c1/memory.usage_in_bytes'],
    ['v2', '0::/pod1/c1\n', 'pod1/c1/memory.current'],
  ])('%s: the same cgroup read under another root reads that root', async (_v, procCgroup, usageFile) => {
    const cg = parseProcCgroup(procCgroup);
    const other = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-stats-cg2-'));
    try {
      await tree(root, { [usageFile]: '100\n' });
      await tree(other, { [usageFile]: '200\n' });
      expect(readCgroupUsage(cg, root).memoryUsage).toBe(100);
      expect(readCgroupUsage(cg, other).memoryUsage).toBe(200);
      expect(readCgroupUsage(parentCgroup(cg), root).memoryUsage).toBeUndefined();
    } finally {
      await fsp.rm(other, { recursive: true, force: true });
    }
  });
});

describe('cgroup v1 reader', () => {
  const stat =
    'cache 100\nrss 999\ninactive_file 5\ntotal_cache 2097152\ntotal_rss 4096000\ntotal_inactive_file 2097152\ntotal_pgfault 42\ntotal_pgmajfault 3\n';

  it('cgroupfs layout with separate cpu and cpuacct mounts', async () => {
    await tree(root, {
      'cpuacct/docker/c1/cpuacct.usage': '1500000000\n',
      'memory/docker/c1/memory.usage_in_bytes': '10485760\n',
      'memory/docker/c1/memory.limit_in_bytes': '67108864\n',
      'memory/docker/c1/memory.stat': stat,
      'pids/docker/c1/pids.current': '7\n',
    });
    const cg = parseProcCgroup('8:pids:/docker/c1\n4:memory:/docker/c1\n2:cpuacct:/docker/c1\n1:cpu:/docker/c1\n');
    expect(await readV1Usage(cg, root)).toEqual({
      cpuUsageNanos: 1500000000n,
      memoryUsage: 10485760,
      memoryLimit: 67108864,
      workingSet: 10485760 - 2097152,
      rss: 4096000,
      pageFaults: 42,
      majorPageFaults: 3,
      pids: 7,
    });
  });

  it('co-mounted cpu,cpuacct, no limit, no pids controller (processes counted instead), under a CgroupParent', async () => {
    await tree(root, {
      'cpu,cpuacct/kubepods/podu1/c1/cpuacct.usage': '5\n',
      'cpu,cpuacct/kubepods/podu1/c1/cgroup.procs': '10\n11\n12\n',
      'memory/kubepods/podu1/c1/memory.usage_in_bytes': '4096\n',
      'memory/kubepods/podu1/c1/memory.limit_in_bytes': V1_UNLIMITED,
      'memory/kubepods/podu1/c1/memory.stat': 'rss 1000\ninactive_file 96\npgfault 1\npgmajfault 0\n',
    });
    const cg = parseProcCgroup('4:memory:/kubepods/podu1/c1\n2:cpu,cpuacct:/kubepods/podu1/c1\n');
    expect(controllerDirSync(cg, 'cpuacct', root)).toBe(path.join(root, 'cpu,cpuacct/kubepods/podu1/c1'));
    const u = await readCgroupUsage(cg, root);
    expect(u).toEqual({
      cpuUsageNanos: 5n,
      memoryUsage: 4096,
      memoryLimit: undefined,
      workingSet: 4000,
      rss: 1000,
      pageFaults: 1,
      majorPageFaults: 0,
      pids: 3,
    });
  });

  it('a cgroup that is gone reads as empty, not as an error', async () => {
    const u = await readV1Usage(parseProcCgroup('4:memory:/docker/gone\n2:cpuacct:/docker/gone\n'), root);
    expect(u.cpuUsageNanos).toBeUndefined();
    expect(u.memoryUsage).toBeUndefined();
    expect(u.workingSet).toBeUndefined();
  });

  it('lists child cgroups (in the memory hierarchy)', async () => {
    await tree(root, {
      'memory/pod1/c1/memory.stat': '',
      'memory/pod1/c2/memory.stat': '',
      'memory/pod1/memory.stat': '',
    });
    const parent = parentCgroup(parseProcCgroup('4:memory:/pod1/c1\n2:cpuacct:/pod1/c1\n'));
    expect((await childCgroups(parent, root))?.sort()).toEqual(['c1', 'c2']);
  });
});

describe('cgroup v2 reader', () => {
  it('systemd layout; memory.max "max" is no limit; usage_usec becomes ns', async () => {
    await tree(root, {
      'system.slice/docker-c1.scope/cpu.stat': 'usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n',
      'system.slice/docker-c1.scope/memory.current': '8192\n',
      'system.slice/docker-c1.scope/memory.max': 'max\n',
      'system.slice/docker-c1.scope/memory.stat': 'anon 4096\nfile 4096\ninactive_file 1024\npgfault 9\npgmajfault 1\n',
      'system.slice/docker-c1.scope/pids.current': '2\n',
    });
    expect(await readV2Usage(parseProcCgroup('0::/system.slice/docker-c1.scope\n'), root)).toEqual({
      cpuUsageNanos: 2500000n,
      memoryUsage: 8192,
      memoryLimit: undefined,
      workingSet: 7168,
      rss: 4096,
      pageFaults: 9,
      majorPageFaults: 1,
      pids: 2,
    });
  });

  it('cgroupfs layout under a pod cgroup, with a limit', async () => {
    await tree(root, {
      'kubepods/podu1/c1/cpu.stat': 'usage_usec 1\n',
      'kubepods/podu1/c1/memory.current': '300\n',
      'kubepods/podu1/c1/memory.max': '1000\n',
      'kubepods/podu1/c1/memory.stat': 'anon 200\ninactive_file 500\n',
    });
    const u = await readCgroupUsage(parseProcCgroup('0::/kubepods/podu1/c1\n'), root);
    expect(u.memoryLimit).toBe(1000);
    // inactive file above usage (racy reads) must not go negative
    expect(u.workingSet).toBe(0);
    expect(u.pids).toBeUndefined();
  });
});
