import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parseProcCgroup, readCgroupUsage, workingSet } from '../../src/stats/cgroup';
import { parseNetDev } from '../../src/stats/netdev';

async function tree(root: string, files: Record<string, string>): Promise<void> {
  for (const [f, content] of Object.entries(files)) {
    await fsp.mkdir(path.dirname(path.join(root, f)), { recursive: true });
    await fsp.writeFile(path.join(root, f), content);
  }
}

describe('cgroup paths', () => {
  it('parses v1 (co-mounted controllers included) and v2', () => {
    const v1 = parseProcCgroup('4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n0::/docker/abc\n');
    expect(v1.version).toBe(1);
    expect(v1.paths.get('memory')).toBe('/docker/abc');
    expect(v1.paths.get('cpuacct')).toBe('/docker/abc');
    const v2 = parseProcCgroup('0::/system.slice/docker-abc.scope\n');
    expect(v2).toEqual({ version: 2, paths: new Map([['', '/system.slice/docker-abc.scope']]) });
  });
});

describe('cgroup readers', () => {
  let root: string;
  beforeEach(async () => {
    root = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cg-'));
  });
  afterEach(() => fsp.rm(root, { recursive: true, force: true }));

  it('reads cgroup v1 (cgroupfs layout, co-mounted cpu,cpuacct)', async () => {
    await tree(root, {
      'cpu,cpuacct/kubepods/pod1/c1/cpuacct.usage': '1500000000\n',
      'memory/kubepods/pod1/c1/memory.usage_in_bytes': '10485760\n',
      'memory/kubepods/pod1/c1/memory.limit_in_bytes': '67108864\n',
      'memory/kubepods/pod1/c1/memory.stat': 'cache 100\nrss 999\ntotal_rss 4096000\ntotal_inactive_file 2097152\ntotal_pgfault 42\ntotal_pgmajfault 3\n',
      'pids/kubepods/pod1/c1/pids.current': '7\n',
    });
    const cg = parseProcCgroup('5:pids:/kubepods/pod1/c1\n4:memory:/kubepods/pod1/c1\n2:cpu,cpuacct:/kubepods/pod1/c1\n');
    expect(await readCgroupUsage(cg, root)).toEqual({
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

  it('reads cgroup v2 (systemd layout), where an unlimited memory.max is "max"', async () => {
    await tree(root, {
      'system.slice/docker-c1.scope/cpu.stat': 'usage_usec 2500\nuser_usec 2000\n',
      'system.slice/docker-c1.scope/memory.current': '8192\n',
      'system.slice/docker-c1.scope/memory.max': 'max\n',
      'system.slice/docker-c1.scope/memory.stat': 'anon 4096\ninactive_file 1024\npgfault 9\npgmajfault 1\n',
      'system.slice/docker-c1.scope/pids.current': '2\n',
    });
    expect(await readCgroupUsage(parseProcCgroup('0::/system.slice/docker-c1.scope\n'), root)).toEqual({
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

  it('never reports a negative working set', () => {
    expect(workingSet(100, 500)).toBe(0);
    expect(workingSet(undefined, 1)).toBeUndefined();
  });
});

describe('/proc/<pid>/net/dev', () => {
  it('reads per-interface bytes and errors, without loopback', () => {
    const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0
  eth0:  123456     200    2    0    0     0          0         0    65432     150    1    0    0     0       0          0
`;
    expect(parseNetDev(text)).toEqual([{ name: 'eth0', rxBytes: 123456, rxErrors: 2, txBytes: 65432, txErrors: 1 }]);
  });
});
