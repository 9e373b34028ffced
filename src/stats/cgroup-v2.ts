import * as path from 'path';
import { controllerDir, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, parseFlatKeyed, readNumber, readText } from './files';
import { realLimit, workingSet, type CgroupUsage } from './usage';

/**
 * cgroup v2: one unified directory. cpu.stat counts microseconds; memory.stat
 * is already hierarchical; RSS is `anon` (what cAdvisor reports as rss on v2).
 */
export async function readV2Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): Promise<CgroupUsage> {
  const dir = await controllerDir(cg, '', root);
  const [cpuStat, current, max, memStat, pids] = await Promise.all([
    readText(path.join(dir, 'cpu.stat')),
    readNumber(path.join(dir, 'memory.current')),
    readNumber(path.join(dir, 'memory.max')),
    readText(path.join(dir, 'memory.stat')),
    readNumber(path.join(dir, 'pids.current')),
  ]);
  const cpu = parseFlatKeyed(cpuStat).get('usage_usec');
  const ms = parseFlatKeyed(memStat);
  return {
    cpuUsageNanos: cpu !== undefined ? BigInt(cpu) * 1000n : undefined,
    memoryUsage: current,
    memoryLimit: realLimit(max),
    workingSet: workingSet(current, ms.get('inactive_file')),
    rss: ms.get('anon'),
    pageFaults: ms.get('pgfault'),
    majorPageFaults: ms.get('pgmajfault'),
    pids: pids ?? (await countLines(path.join(dir, 'cgroup.procs'))),
  };
}
