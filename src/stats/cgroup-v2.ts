import * as path from 'path';
import { controllerDir, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, keyedValue, readNumber, readText } from './files';
import { realLimit, workingSet, type CgroupUsage } from './usage';

/**
 * cgroup v2: one unified directory. cpu.stat counts microseconds; memory.stat
 * is already hierarchical; RSS is `anon` (what cAdvisor reports as rss on v2).
 */
export async function readV2Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): Promise<CgroupUsage> {
  const dir = await controllerDir(cg, '', root);
  const cpu = keyedValue(readText(path.join(dir, 'cpu.stat')), 'usage_usec ');
  const current = readNumber(path.join(dir, 'memory.current'));
  const stat = readText(path.join(dir, 'memory.stat'));
  return {
    cpuUsageNanos: cpu !== undefined ? BigInt(cpu) * 1000n : undefined,
    memoryUsage: current,
    memoryLimit: realLimit(readNumber(path.join(dir, 'memory.max'))),
    workingSet: workingSet(current, keyedValue(stat, 'inactive_file ')),
    rss: keyedValue(stat, 'anon '),
    pageFaults: keyedValue(stat, 'pgfault '),
    majorPageFaults: keyedValue(stat, 'pgmajfault '),
    pids: readNumber(path.join(dir, 'pids.current')) ?? countLines(path.join(dir, 'cgroup.procs')),
  };
}
