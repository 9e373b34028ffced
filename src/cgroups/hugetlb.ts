import { constants as fsConstants, existsSync, promises as fsp, readdirSync } from 'fs';
import * as path from 'path';
import type { Logger } from '../logging/logger';
import { internal, invalidArgument } from '../errors';
import {
  controllerDirSync,
  DEFAULT_CGROUP_ROOT,
  keyPath,
  readProcCgroup,
  type CgroupPaths,
} from '../stats/cgroup-path';
import { readTextSync } from '../stats/files';
import { checkHugepageLimits, type HugepageLimit } from '../cri/container-resources';

export interface HugetlbOptions {
  /** Where the cgroup hierarchies are mounted (a temp dir in tests). */
  cgroupRoot?: string;
  /** Where /proc is (to find a process's cgroup). */
  proc?: string;
}

/** Writes and reads hugepage limits in a container's hugetlb cgroup (Docker has no field for them). */
export interface HugetlbCgroup {
  /** Writes each limit to the cgroup of container `id` (process `pid`); returns what was written (nothing without a hugetlb controller). */
  apply(pid: number, id: string, limits: HugepageLimit[], log: Logger): Promise<HugepageLimit[]>;
  /** The limits the cgroup of container `id` (process `pid`) has now (empty without a hugetlb controller). */
  read(pid: number, id: string): Promise<HugepageLimit[]>;
}

/** v1 `hugetlb.2MB.limit_in_bytes`, v2 `hugetlb.2MB.max` (reservation files `.rsvd.` excluded). */
const LIMIT_FILE_RE = /^hugetlb\.([1-9][0-9]*[KMGTP]?B)\.(limit_in_bytes|max)$/;
const UINT64_MAX = ((1n << 64n) - 1n).toString();

function limitFile(cg: CgroupPaths, pageSize: string): string {
  return `hugetlb.${pageSize}.${cg.version === 2 ? 'max' : 'limit_in_bytes'}`;
}

export function hugetlbCgroup(opts: HugetlbOptions = {}): HugetlbCgroup {
  const root = opts.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  const proc = opts.proc ?? '/proc';
  let warned = false;

  /**
   * The cgroup of `pid`, if it is container `id`'s: Docker names every container cgroup after
   * the id (cgroupfs `<parent>/<id>`, systemd `docker-<id>.scope`). A remote Docker's pids
   * are not ours, and writing limits into some local process's cgroup must not happen.
   * Synchronous, as every cgroupfs and procfs read here (see stats/files.ts): ContainerStatus
   * asks for each running container once a minute, and a thread-pool hop per file cost more
   * than the read.
   */
  const containerCgroup = (pid: number, id: string): CgroupPaths | undefined => {
    const cg = readProcCgroup(pid, proc)?.paths;
    return cg && keyPath(cg)?.includes(id) ? cg : undefined;
  };

  /** The cgroup directory holding the hugetlb files, or undefined when the host has no such controller. */
  const hugetlbDir = (cg: CgroupPaths): string | undefined => {
    const dir = controllerDirSync(cg, 'hugetlb', root);
    if (cg.version === 1) return cg.paths.has('hugetlb') && existsSync(dir) ? dir : undefined;
    return (readTextSync(path.join(dir, 'cgroup.controllers')) ?? '').split(/\s+/).includes('hugetlb')
      ? dir
      : undefined;
  };

  const apply = async (pid: number, id: string, limits: HugepageLimit[], log: Logger): Promise<HugepageLimit[]> => {
    if (limits.length === 0) return [];
    const cg = containerCgroup(pid, id);
    if (!cg) {
      log.warn(
        'cgroup of the container not found on this host (process gone, or a remote Docker): hugepage limits not applied',
        { containerId: id, pid },
      );
      return [];
    }
    const dir = hugetlbDir(cg);
    if (!dir) {
      // kubelets send a limit per page size even when they are all 0; once is enough to say so
      if (!warned)
        log.warn('no hugetlb cgroup controller on this host: resources.hugepage_limits are not enforced (warned once)');
      warned = true;
      return [];
    }
    for (const l of checkHugepageLimits(limits)) {
      const file = path.join(dir, limitFile(cg, l.page_size));
      try {
        // no O_CREAT: a missing file means the host lacks that page size
        await fsp.writeFile(file, l.limit, { flag: fsConstants.O_WRONLY | fsConstants.O_TRUNC });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT')
          throw invalidArgument(`resources.hugepage_limits: page size ${l.page_size} is not supported by this host`);
        throw internal(`write hugepage limit ${l.page_size}=${l.limit} to ${file}: ${(err as Error).message}`, err);
      }
    }
    log.info('hugepage limits written', { limits });
    return limits;
  };

  const read = async (pid: number, id: string): Promise<HugepageLimit[]> => {
    const cg = containerCgroup(pid, id);
    const dir = cg && hugetlbDir(cg);
    if (!dir) return [];
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return [];
    }
    const out: HugepageLimit[] = [];
    for (const name of names.sort()) {
      const m = LIMIT_FILE_RE.exec(name);
      if (!m || (m[2] === 'max') !== (cg.version === 2)) continue;
      const raw = (readTextSync(path.join(dir, name)) ?? '').trim();
      if (raw) out.push({ page_size: m[1], limit: raw === 'max' ? UINT64_MAX : raw });
    }
    return out;
  };

  return { apply, read };
}
