import * as path from 'path';
import { controllerDir, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, keyedValue, readBigInt, readNumber, readText } from './files';
import { realLimit, workingSet, type CgroupUsage } from './usage';

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

async function v1Files(cg: CgroupPaths, root: string): Promise<V1Files> {
  const [cpuDir, memDir, pidsDir] = await Promise.all([
    controllerDir(cg, 'cpuacct', root),
    controllerDir(cg, 'memory', root),
    controllerDir(cg, 'pids', root),
  ]);
  return {
    cpu: path.join(cpuDir, 'cpuacct.usage'),
    usage: path.join(memDir, 'memory.usage_in_bytes'),
    limit: path.join(memDir, 'memory.limit_in_bytes'),
    stat: path.join(memDir, 'memory.stat'),
    pids: path.join(pidsDir, 'pids.current'),
    procs: path.join(cpuDir, 'cgroup.procs'),
  };
}

/** memory.stat's hierarchical key, else the cgroup's own (keys end with the separator, see keyedValue). */
function pick(stat: string | undefined, key: string): number | undefined {
  return keyedValue(stat, `total_${key} `) ?? keyedValue(stat, `${key} `);
}

export async function readV1Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): Promise<CgroupUsage> {
  let f = root === DEFAULT_CGROUP_ROOT ? filesOf.get(cg) : undefined;
  if (!f) {
    f = await v1Files(cg, root);
    if (root === DEFAULT_CGROUP_ROOT) filesOf.set(cg, f);
  }
  const usage = readNumber(f.usage);
  const stat = readText(f.stat);
  return {
    cpuUsageNanos: readBigInt(f.cpu),
    memoryUsage: usage,
    memoryLimit: realLimit(readNumber(f.limit)),
    workingSet: workingSet(usage, pick(stat, 'inactive_file')),
    rss: pick(stat, 'rss'),
    pageFaults: pick(stat, 'pgfault'),
    majorPageFaults: pick(stat, 'pgmajfault'),
    pids: readNumber(f.pids) ?? countLines(f.procs),
  };
}
