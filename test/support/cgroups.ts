import { existsSync, promises as fsp } from 'fs';

/**
 * The host's cgroups as the e2e tests find them, worked out apart from crishim's own readers
 * (src/stats/cgroup-path.ts), so that a mistake there cannot confirm itself.
 */

/** A cgroup v2 host exposes cgroup.controllers at the root of its one hierarchy. */
export const CGROUP_V2 = existsSync('/sys/fs/cgroup/cgroup.controllers');

/**
 * The directory of process `pid`'s cgroup, as the kernel lists it in /proc/<pid>/cgroup:
 * `controller`'s hierarchy on v1, the one unified directory on v2 (whatever `controller` is).
 * Undefined on v1 when no hierarchy of that controller is mounted.
 */
export async function cgroupDirOf(pid: number, controller: string): Promise<string | undefined> {
  const lines = (await fsp.readFile(`/proc/${pid}/cgroup`, 'utf8')).split('\n').map((l) => l.split(':'));
  const line = CGROUP_V2 ? lines.find((l) => l[0] === '0') : lines.find((l) => l[1]?.split(',').includes(controller));
  if (!line) return undefined;
  return CGROUP_V2 ? `/sys/fs/cgroup${line[2]}` : `/sys/fs/cgroup/${controller}${line[2]}`;
}
