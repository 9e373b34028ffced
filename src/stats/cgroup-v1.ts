import * as path from 'path';
import { controllerDirSync, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, keyedValue, readBigInt, readNumber, readText } from './files';
import { realLimit, workingSet, type CgroupUsage, type UsageWanted } from './usage';

/**
 * cgroup v1: one hierarchy per controller. memory.stat's `total_*` keys include
 * descendants (what a pod cgroup needs); the plain keys are the fallback for
 * kernels that lack them.
 */
/** A cgroup's file names, worked out once per CgroupPaths (the facts cache keeps the same object for a container's life). */
const filesOf = new WeakMap<CgroupPaths, V1Files>();
interface V1Files {
  cpu: string;
  usage: string;
  limit: string;
  stat: string;
  pids: string;
  procs: string;
}

function v1Files(cg: CgroupPaths, root: string): V1Files {
  let f = root === DEFAULT_CGROUP_ROOT ? filesOf.get(cg) : undefined;
  if (!f) {
    const cpuDir = controllerDirSync(cg, 'cpuacct', root);
    const memDir = controllerDirSync(cg, 'memory', root);
    f = {
      cpu: path.join(cpuDir, 'cpuacct.usage'),
      usage: path.join(memDir, 'memory.usage_in_bytes'),
      limit: path.join(memDir, 'memory.limit_in_bytes'),
      stat: path.join(memDir, 'memory.stat'),
      pids: path.join(controllerDirSync(cg, 'pids', root), 'pids.current'),
      procs: path.join(cpuDir, 'cgroup.procs'),
    };
    if (root === DEFAULT_CGROUP_ROOT) filesOf.set(cg, f);
  }
  return f;
}

/** memory.stat's hierarchical key, else the cgroup's own (keys end with the separator, see keyedValue). */
const statKeys = (key: string): [string, string] => [`total_${key} `, `${key} `];
const INACTIVE_FILE = statKeys('inactive_file');
const RSS = statKeys('rss');
const PGFAULT = statKeys('pgfault');
const PGMAJFAULT = statKeys('pgmajfault');
function pick(stat: string | undefined, [total, own]: [string, string]): number | undefined {
  return keyedValue(stat, total) ?? keyedValue(stat, own);
}

/** Tasks in the cgroup: pids.current, else the processes of cgroup.procs. */
export function readV1Pids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  const f = v1Files(cg, root);
  return readNumber(f.pids) ?? countLines(f.procs);
}

export function readV1Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT, want: UsageWanted = {}): CgroupUsage {
  const f = v1Files(cg, root);
  const usage = readNumber(f.usage);
  const stat = readText(f.stat);
  return {
    cpuUsageNanos: readBigInt(f.cpu),
    memoryUsage: usage,
    memoryLimit: want.limit === false ? undefined : realLimit(readNumber(f.limit)),
    workingSet: workingSet(usage, pick(stat, INACTIVE_FILE)),
    rss: pick(stat, RSS),
    pageFaults: pick(stat, PGFAULT),
    majorPageFaults: pick(stat, PGMAJFAULT),
    pids: want.pids === false ? undefined : readV1Pids(cg, root),
  };
}
