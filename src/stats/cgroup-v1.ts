import * as path from 'path';
import { controllerDir, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, parseFlatKeyed, readBigInt, readNumber, readText } from './files';
import { realLimit, workingSet, type CgroupUsage } from './usage';

/**
 * cgroup v1: one hierarchy per controller. memory.stat's `total_*` keys include
 * descendants (what a pod cgroup needs); the plain keys are the fallback for
 * kernels that lack them.
 */
export async function readV1Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): Promise<CgroupUsage> {
  const [cpuDir, memDir, pidsDir] = await Promise.all([
    controllerDir(cg, 'cpuacct', root),
    controllerDir(cg, 'memory', root),
    controllerDir(cg, 'pids', root),
  ]);
  const [cpu, usage, limit, memStat, pids] = await Promise.all([
    readBigInt(path.join(cpuDir, 'cpuacct.usage')),
    readNumber(path.join(memDir, 'memory.usage_in_bytes')),
    readNumber(path.join(memDir, 'memory.limit_in_bytes')),
    readText(path.join(memDir, 'memory.stat')),
    readNumber(path.join(pidsDir, 'pids.current')),
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
    pids: pids ?? (await countLines(path.join(cpuDir, 'cgroup.procs'))),
  };
}
