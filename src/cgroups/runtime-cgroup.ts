import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Logger } from '../logging/logger';

/** --runtime-cgroups: moving the daemon into the cgroup an operator names (as cri-dockerd does). */
export interface CgroupMount {
  mountPoint: string;
  /** cgroup2 (unified): one hierarchy for every controller. */
  unified: boolean;
  /** A v1 cpuset hierarchy: a new cgroup there is unusable until it has CPUs and memory nodes. */
  cpuset: boolean;
}

/** cgroup filesystems in a /proc/self/mounts text (paths there escape spaces and the like as octal). */
export function parseCgroupMounts(mounts: string): CgroupMount[] {
  const out: CgroupMount[] = [];
  for (const line of mounts.split('\n')) {
    const [, mountPoint, type, options = ''] = line.split(' ');
    if (type !== 'cgroup' && type !== 'cgroup2') continue;
    out.push({
      mountPoint: mountPoint.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8))),
      unified: type === 'cgroup2',
      cpuset: type === 'cgroup' && options.split(',').includes('cpuset'),
    });
  }
  return out;
}

/** Gives each new cpuset cgroup on the way down its parent's CPUs and memory nodes (v1 starts them empty). */
async function inheritCpuset(mountPoint: string, cgroup: string): Promise<void> {
  const read = (file: string): Promise<string> =>
    fsp.readFile(file, 'utf8').then(
      (t) => t.trim(),
      () => '',
    );
  let parent = mountPoint;
  for (const part of cgroup.split('/').filter(Boolean)) {
    const child = path.join(parent, part);
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      if (await read(path.join(child, file))) continue;
      const inherited = await read(path.join(parent, file));
      if (inherited) await fsp.writeFile(path.join(child, file), inherited);
    }
    parent = child;
  }
}

/**
 * Moves a process into `cgroup` (absolute, e.g. /system.slice/crishim.service),
 * creating it where missing: under every v1 hierarchy mounted, or the unified
 * one on a pure cgroup v2 host. Tries every hierarchy, then throws one error
 * naming those that failed. Returns the cgroup.procs files written.
 */
export async function joinCgroup(cgroup: string, opts: { pid?: number; mountsFile?: string } = {}): Promise<string[]> {
  const mounts = parseCgroupMounts(await fsp.readFile(opts.mountsFile ?? '/proc/self/mounts', 'utf8'));
  const v1 = mounts.filter((m) => !m.unified);
  // on a hybrid host the unified mount holds no controllers: the v1 hierarchies are what counts
  const targets = v1.length ? v1 : mounts.slice(0, 1);
  if (!targets.length) throw new Error('no cgroup filesystem is mounted');
  const written: string[] = [];
  const failures: string[] = [];
  for (const m of targets) {
    const procs = path.join(m.mountPoint, cgroup, 'cgroup.procs');
    try {
      await fsp.mkdir(path.dirname(procs), { recursive: true });
      if (m.cpuset) await inheritCpuset(m.mountPoint, cgroup);
      await fsp.writeFile(procs, `${opts.pid ?? process.pid}\n`);
      written.push(procs);
    } catch (err) {
      failures.push(`${procs}: ${(err as Error).message}`);
    }
  }
  if (failures.length) throw new Error(`cannot move into cgroup ${cgroup}: ${failures.join('; ')}`);
  return written;
}

/**
 * A failure (read-only cgroupfs, a v1 controller refusing us) leaves the daemon where it
 * started in those hierarchies, which only costs resource accounting.
 * CRISHIM_CGROUP_MOUNTS_FILE replaces /proc/self/mounts, so e2e tests can use a fake cgroup tree.
 */
export async function enterRuntimeCgroup(cgroup: string, logger: Logger): Promise<void> {
  try {
    const files = await joinCgroup(cgroup, { mountsFile: process.env.CRISHIM_CGROUP_MOUNTS_FILE || undefined });
    logger.info('moved into the runtime cgroup', { cgroup, hierarchies: files.length });
  } catch (err) {
    logger.warn('--runtime-cgroups: could not move the daemon into the runtime cgroup', {
      cgroup,
      error: (err as Error).message,
    });
  }
}
