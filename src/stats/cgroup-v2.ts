import * as path from 'path';
import { controllerDirSync, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, keyedValue, readNumber, readText } from './files';
import { realLimit, workingSet, type CgroupUsage, type UsageWanted } from './usage';

/**
 * cgroup v2: one unified directory. cpu.stat counts microseconds; memory.stat
 * is already hierarchical; RSS is `anon` (what cAdvisor reports as rss on v2).
 */
export function readV2Pids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  const dir = controllerDirSync(cg, '', root);
  return readNumber(path.join(dir, 'pids.current')) ?? countLines(path.join(dir, 'cgroup.procs'));
}

export function readV2Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT, want: UsageWanted = {}): CgroupUsage {
  const dir = controllerDirSync(cg, '', root);
  const cpu = keyedValue(readText(path.join(dir, 'cpu.stat')), 'usage_usec ');
  const current = readNumber(path.join(dir, 'memory.current'));
  const stat = readText(path.join(dir, 'memory.stat'));
  return {
    cpuUsageNanos: cpu !== undefined ? BigInt(cpu) * 1000n : undefined,
    memoryUsage: current,
    memoryLimit: want.limit === false ? undefined : realLimit(readNumber(path.join(dir, 'memory.max'))),
    workingSet: workingSet(current, keyedValue(stat, 'inactive_file ')),
    rss: keyedValue(stat, 'anon '),
    pageFaults: keyedValue(stat, 'pgfault '),
    majorPageFaults: keyedValue(stat, 'pgmajfault '),
    pids: want.pids === false ? undefined : readV2Pids(cg, root),
  };
}
