import { DEFAULT_CGROUP_ROOT, readProcCgroup, type CgroupPaths } from './cgroup-path';
import { readV1Pids, readV1TreePids, readV1Usage } from './cgroup-v1';
import { readV2Pids, readV2TreePids, readV2Usage } from './cgroup-v2';
import type { CgroupUsage, UsageWanted } from './usage';

/**
 * Reads a cgroup's resource usage straight from the cgroup filesystem, v1 or v2
 * (cgroupfs and systemd layouts alike: the paths come from /proc/<pid>/cgroup).
 * Synchronous: cgroupfs answers from kernel memory (see files.ts).
 */
export function readCgroupUsage(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT, want?: UsageWanted): CgroupUsage {
  return cg.version === 2 ? readV2Usage(cg, root, want) : readV1Usage(cg, root, want);
}

/** The tasks in a cgroup (what a reading made with `pids: false` left out). */
export function readCgroupPids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  return cg.version === 2 ? readV2Pids(cg, root) : readV1Pids(cg, root);
}

/**
 * The tasks in a cgroup and every cgroup under it, from pids.current alone (a pod cgroup's whole
 * pod in one read); undefined without the pids controller, as cgroup.procs lists only its own.
 */
export function readCgroupTreePids(cg: CgroupPaths, root = DEFAULT_CGROUP_ROOT): number | undefined {
  return cg.version === 2 ? readV2TreePids(cg, root) : readV1TreePids(cg, root);
}

export async function cgroupOfPid(pid: number): Promise<CgroupPaths | undefined> {
  return readProcCgroup(pid)?.paths;
}

export { parseProcCgroup, type CgroupPaths } from './cgroup-path';
export { workingSet, type CgroupUsage } from './usage';
