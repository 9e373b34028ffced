import * as path from 'path';
import { controllerDir, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, parseFlatKeyed, readBigInt, readNumber, readText } from './files';
import { realLimit, workingSet, type CgroupUsage } from './usage';

/**
 * cgroup v1: one hierarchy per controller. memory.stat's `total_*` keys include
 * descendants (what a pod cgroup needs); the plain keys are the fallback for
 * kernels that lack them.
 */
/** A cgroup's file names, worked out once per CgroupPaths (the facts cache keeps the same object for a container's life). */
const filesOf = new WeakMap<CgroupPaths, Promise<V1Files>>();
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

export async function readV1Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): Promise<CgroupUsage> {
  let files = root === DEFAULT_CGROUP_ROOT ? filesOf.get(cg) : undefined;
  if (!files) {
    files = v1Files(cg, root);
    if (root === DEFAULT_CGROUP_ROOT) filesOf.set(cg, files);
  }
  const f = await files;
  const [cpu, usage, limit, memStat, pids] = await Promise.all([
    readBigInt(f.cpu),
    readNumber(f.usage),
    readNumber(f.limit),
    readText(f.stat),
    readNumber(f.pids),
  ]);
  const ms = parseFlatKeyed(memStat);
  const pick = (k: string): number | undefined => ms.get(`total_${k}`) ?? ms.get(k);
  return {
    cpuUsageNanos: cpu,
    memoryUsage: usage,
    memoryLimit: realLimit(limit),
    workingSet: workingSet(usage, pick('inactive_file')),
    rss: pick('rss'),
    pageFaults: pick('pgfault'),
    majorPageFaults: pick('pgmajfault'),
    pids: pids ?? (await countLines(f.procs)),
  };
}
