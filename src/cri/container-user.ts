import * as path from 'path';
import type { RuntimeRes } from '../server/rpc';
import { readTextSync } from '../stats/files';

/** ContainerStatus.user: the identity the container's init process runs with (the kubelet shows it in the pod status). */

export type ContainerUser = NonNullable<NonNullable<RuntimeRes<'ContainerStatus'>['status']>['user']>;

/** The second column of a `Uid:`/`Gid:` line is the effective id. */
function effectiveId(status: string, key: 'Uid' | 'Gid'): string | undefined {
  const m = new RegExp(`^${key}:\\s*([0-9]+)\\s+([0-9]+)`, 'm').exec(status);
  return m?.[2];
}

/**
 * uid, gid and supplementary groups of a running container's init process.
 * Undefined when the pid is not visible as that container (Docker in another pid
 * namespace or on another host, or the process already gone): a wrong identity
 * is worse than none. procfs is read synchronously, as in stats/files.ts: two files from
 * kernel memory cost less than the thread-pool hops around them.
 */
export function containerUser(
  pid: number | undefined,
  containerId: string,
  procRoot = '/proc',
): ContainerUser | undefined {
  if (!pid) return undefined;
  const dir = path.join(procRoot, String(pid));
  const status = readTextSync(path.join(dir, 'status')) ?? '';
  const cgroup = readTextSync(path.join(dir, 'cgroup')) ?? '';
  // both cgroup drivers name the container id in its cgroup path
  if (!cgroup.includes(containerId)) return undefined;
  const uid = effectiveId(status, 'Uid');
  const gid = effectiveId(status, 'Gid');
  if (uid === undefined || gid === undefined) return undefined;
  const groups = (/^Groups:[ \t]*(.*)$/m.exec(status)?.[1] ?? '').trim();
  return { linux: { uid, gid, supplemental_groups: groups ? groups.split(/\s+/) : [] } };
}
