import { DEFAULT_CGROUP_ROOT, filesPerCgroup, type CgroupPaths } from './cgroup-path';
import { countLines, readKept, readKeyed, readNumber, statKey } from './files';
import { realLimit, workingSet, type CgroupUsage, type UsageWanted } from './usage';

/**
 * cgroup v2: one unified directory. cpu.stat counts microseconds; memory.stat
 * is already hierarchical; RSS is `anon` (what cAdvisor reports as rss on v2).
 */
/** A cgroup's files, joined once per CgroupPaths. */
const v2Files = filesPerCgroup({
  cpuStat: ['', 'cpu.stat'],
  current: ['', 'memory.current'],
  stat: ['', 'memory.stat'],
  max: ['', 'memory.max'],
  pids: ['', 'pids.current'],
  procs: ['', 'cgroup.procs'],
});

/** Tasks in the cgroup and all below it: pids.current counts them (undefined without the pids controller). */
export function readV2TreePids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  return readNumber(v2Files(cg, root).pids);
}

export function readV2Pids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  return readV2TreePids(cg, root) ?? countLines(v2Files(cg, root).procs);
}

const CPU_KEYS = [statKey('usage_usec ')];
const STAT_KEYS = ['inactive_file ', 'anon ', 'pgfault ', 'pgmajfault '].map(statKey);
/** Where readKeyed puts a reading's values (copied out at once). */
const values: Array<number | undefined> = new Array<number | undefined>(STAT_KEYS.length);

export function readV2Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT, want: UsageWanted = {}): CgroupUsage {
  const f = v2Files(cg, root);
  readKeyed(f.cpuStat, CPU_KEYS, values);
  const cpu = values[0];
  const current = readNumber(f.current);
  readKeyed(f.stat, STAT_KEYS, values);
  return {
    cpuUsageNanos: cpu !== undefined ? BigInt(cpu) * 1000n : undefined,
    memoryUsage: current,
    memoryLimit: want.limit === false ? undefined : realLimit(readKept(f.max)),
    workingSet: workingSet(current, values[0]),
    rss: values[1],
    pageFaults: values[2],
    majorPageFaults: values[3],
    pids: want.pids === false ? undefined : readV2Pids(cg, root),
  };
}
