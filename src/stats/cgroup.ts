import { DEFAULT_CGROUP_ROOT, readProcCgroup, type CgroupPaths } from './cgroup-path';
import { readV1Usage } from './cgroup-v1';
import { readV2Usage } from './cgroup-v2';
import type { CgroupUsage } from './usage';

/**
 * Reads a cgroup's resource usage straight from the cgroup filesystem, v1 or v2
 * (cgroupfs and systemd layouts alike: the paths come from /proc/<pid>/cgroup).
 */
export function readCgroupUsage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): Promise<CgroupUsage> {
  return cg.version === 2 ? readV2Usage(cg, root) : readV1Usage(cg, root);
}

export async function cgroupOfPid(pid: number): Promise<CgroupPaths | undefined> {
  return (await readProcCgroup(pid))?.paths;
}

export { parseProcCgroup, type CgroupPaths } from './cgroup-path';
export { workingSet, type CgroupUsage } from './usage';
