import { execFileSync } from 'child_process';
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

/** Docker's cgroup driver (`docker info`): it decides the form a pod's cgroup parent takes. */
export function dockerCgroupDriver(): string {
  return execFileSync('docker', ['info', '--format', '{{.CgroupDriver}}'], { encoding: 'utf8' }).trim();
}

/**
 * A pod cgroup parent as a kubelet of Docker's cgroup driver writes it, which is also where the
 * pod's cgroup is, under a hierarchy's root: `/crishim-e2e-<name>` with cgroupfs, a slice path
 * (`/crishim_e2e.slice/crishim_e2e-<name>.slice`, each name saying its ancestry) with systemd.
 * `name` must have no `-`: in a slice's name each one means a level.
 */
export function kubeletCgroupParent(name: string): { parent: string; systemd: boolean } {
  const systemd = dockerCgroupDriver() === 'systemd';
  return { parent: systemd ? `/crishim_e2e.slice/crishim_e2e-${name}.slice` : `/crishim-e2e-${name}`, systemd };
}
