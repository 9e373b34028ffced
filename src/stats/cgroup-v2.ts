import * as path from 'path';
import { controllerDirSync, DEFAULT_CGROUP_ROOT, type CgroupPaths } from './cgroup-path';
import { countLines, readKeyed, readNumber, statKey } from './files';
import { realLimit, workingSet, type CgroupUsage, type UsageWanted } from './usage';

/**
 * cgroup v2: one unified directory. cpu.stat counts microseconds; memory.stat
 * is already hierarchical; RSS is `anon` (what cAdvisor reports as rss on v2).
 */
export function readV2Pids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  const dir = controllerDirSync(cg, '', root);
  return readNumber(path.join(dir, 'pids.current')) ?? countLines(path.join(dir, 'cgroup.procs'));
}

const CPU_KEYS = [statKey('usage_usec ')];
const STAT_KEYS = ['inactive_file ', 'anon ', 'pgfault ', 'pgmajfault '].map(statKey);
/** Where readKeyed puts a reading's values (copied out at once). */
const values: Array<number | undefined> = new Array<number | undefined>(STAT_KEYS.length);

export function readV2Usage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT, want: UsageWanted = {}): CgroupUsage {
  const dir = controllerDirSync(cg, '', root);
  readKeyed(path.join(dir, 'cpu.stat'), CPU_KEYS, values);
  const cpu = values[0];
  const current = readNumber(path.join(dir, 'memory.current'));
  readKeyed(path.join(dir, 'memory.stat'), STAT_KEYS, values);
  return {
    cpuUsageNanos: cpu !== undefined ? BigInt(cpu) * 1000n : undefined,
    memoryUsage: current,
    memoryLimit: want.limit === false ? undefined : realLimit(readNumber(path.join(dir, 'memory.max'))),
    workingSet: workingSet(current, values[0]),
    rss: values[1],
    pageFaults: values[2],
    majorPageFaults: values[3],
    pids: want.pids === false ? undefined : readV2Pids(cg, root),
  };
}
