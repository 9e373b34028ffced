import * as path from 'path';
import { controllerDirSync, DEFAULT_CGROUP_ROOT, perCgroup, type CgroupPaths, type PerCgroup } from './cgroup-path';
import { countLines, readBigInt, readKeyed, readNumber, statKey } from './files';
import { realLimit, workingSet, type CgroupUsage, type UsageWanted } from './usage';

/**
 * cgroup v1: one hierarchy per controller. memory.stat's `total_*` keys include
 * descendants (what a pod cgroup needs); the plain keys are the fallback for
 * kernels that lack them.
 */
interface V1Files {
  cpu: string;
  usage: string;
  limit: string;
  stat: string;
  pids: string;
  procs: string;
}

function makeV1Files(cg: CgroupPaths, root: string): V1Files {
  const cpuDir = controllerDirSync(cg, 'cpuacct', root);
  const memDir = controllerDirSync(cg, 'memory', root);
  return {
    cpu: path.join(cpuDir, 'cpuacct.usage'),
    usage: path.join(memDir, 'memory.usage_in_bytes'),
    limit: path.join(memDir, 'memory.limit_in_bytes'),
    stat: path.join(memDir, 'memory.stat'),
    pids: path.join(controllerDirSync(cg, 'pids', root), 'pids.current'),
    procs: path.join(cpuDir, 'cgroup.procs'),
  };
}

/** A cgroup's file names, worked out once per CgroupPaths. */
const filesOf: PerCgroup<V1Files> = new WeakMap();
const v1Files = (cg: CgroupPaths, root: string): V1Files => perCgroup(filesOf, cg, root, makeV1Files);

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

/** Tasks in the cgroup: pids.current, else the processes of cgroup.procs. */
export function readV1Pids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  const f = v1Files(cg, root);
  return readNumber(f.pids) ?? countLines(f.procs);
}

export function readV1Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT, want: UsageWanted = {}): CgroupUsage {
  const f = v1Files(cg, root);
  const usage = readNumber(f.usage);
  readKeyed(f.stat, STAT_KEYS, statValues);
  return {
    cpuUsageNanos: readBigInt(f.cpu),
    memoryUsage: usage,
    memoryLimit: want.limit === false ? undefined : realLimit(readNumber(f.limit)),
    workingSet: workingSet(usage, pick(INACTIVE_FILE)),
    rss: pick(RSS),
    pageFaults: pick(PGFAULT),
    majorPageFaults: pick(PGMAJFAULT),
    pids: want.pids === false ? undefined : readV1Pids(cg, root),
  };
}
