import { DEFAULT_CGROUP_ROOT, filesPerCgroup, type CgroupPaths } from './cgroup-path';
import { countLines, readBigInt, readKept, readKeyed, readNumber, statKey } from './files';
import { realLimit, workingSet, type CgroupUsage, type UsageWanted } from './usage';

/**
 * cgroup v1: one hierarchy per controller. memory.stat's `total_*` keys include
 * descendants (what a pod cgroup needs); the plain keys are the fallback for
 * kernels that lack them.
 */
/** A cgroup's files, joined once per CgroupPaths. */
const v1Files = filesPerCgroup({
  cpu: ['cpuacct', 'cpuacct.usage'],
  usage: ['memory', 'memory.usage_in_bytes'],
  limit: ['memory', 'memory.limit_in_bytes'],
  stat: ['memory', 'memory.stat'],
  pids: ['pids', 'pids.current'],
  procs: ['cpuacct', 'cgroup.procs'],
});

/**
 * The memory.stat keys a reading needs, each as its hierarchical key (`total_*`, what a pod
 * cgroup needs) and then the cgroup's own, the fallback for kernels that lack the former.
 */
const STAT_KEYS = ['inactive_file', 'rss', 'pgfault', 'pgmajfault'].flatMap((k) => [
  statKey(`total_${k} `),
  statKey(`${k} `),
]);
const [INACTIVE_FILE, RSS, PGFAULT, PGMAJFAULT] = [0, 2, 4, 6];
/** Where readKeyed puts a reading's values (used and copied out at once: no array per container). */
const statValues: Array<number | undefined> = new Array<number | undefined>(STAT_KEYS.length);
const pick = (at: number): number | undefined => statValues[at] ?? statValues[at + 1];

/** Tasks in the cgroup and all below it: pids.current counts them (undefined without the pids controller). */
export function readV1TreePids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  return readNumber(v1Files(cg, root).pids);
}

/** Tasks in the cgroup: pids.current, else the processes of cgroup.procs. */
export function readV1Pids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  return readV1TreePids(cg, root) ?? countLines(v1Files(cg, root).procs);
}

export function readV1Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT, want: UsageWanted = {}): CgroupUsage {
  const f = v1Files(cg, root);
  const usage = readNumber(f.usage);
  readKeyed(f.stat, STAT_KEYS, statValues);
  return {
    cpuUsageNanos: readBigInt(f.cpu),
    memoryUsage: usage,
    memoryLimit: want.limit === false ? undefined : realLimit(readKept(f.limit)),
    workingSet: workingSet(usage, pick(INACTIVE_FILE)),
    rss: pick(RSS),
    pageFaults: pick(PGFAULT),
    majorPageFaults: pick(PGMAJFAULT),
    pids: want.pids === false ? undefined : readV1Pids(cg, root),
  };
}
