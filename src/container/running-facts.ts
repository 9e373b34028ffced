import type { HugetlbCgroup } from '../cgroups/hugetlb';
import type { HugepageLimit } from '../cri/container-resources';
import { containerUser, type ContainerUser } from '../cri/container-user';

/**
 * What ContainerStatus reports about a running container from procfs and cgroupfs: the identity of
 * its init process and the hugepage limits its cgroup enforces. A kubelet asks for the status of
 * every running container every 10 s (its log manager, looking for logs to rotate), and reading
 * both each time was most of what crishim allocated under a real kubelet's load.
 *
 * Neither changes while the same process runs, except when crishim writes the limits itself, so
 * they are read once per (container, pid): a restart brings a new pid and a new read, and every
 * write through `hugetlb` forgets that container's facts. The identity kept is the one the process
 * had at the first status after its start; the kubelet shows the identity a container started with
 * (KEP-3619), not one it took later with setuid. Facts not asked for in `idleMs` are dropped, which
 * also forgets removed containers.
 */
export interface RunningFacts {
  user: ContainerUser | undefined;
  hugepages: HugepageLimit[];
}

export interface RunningFactsCache {
  /** The facts about container `id` while its init process is `pid`. */
  get(id: string, pid: number): Promise<RunningFacts>;
  /** `hugetlb` for the RPCs that write limits: a write forgets the container's facts. */
  readonly hugetlb: HugetlbCgroup;
}

export interface RunningFactsOptions {
  readUser?: (pid: number, id: string) => ContainerUser | undefined;
  idleMs?: number;
  now?: () => number;
}

interface Entry {
  pid: number;
  facts: Promise<RunningFacts>;
  usedAt: number;
}

export function runningFactsCache(hugetlb: HugetlbCgroup, opts: RunningFactsOptions = {}): RunningFactsCache {
  const readUser = opts.readUser ?? containerUser;
  const idleMs = opts.idleMs ?? 10 * 60_000;
  const now = opts.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let sweptAt = now();

  const sweep = (t: number): void => {
    if (t - sweptAt < idleMs) return;
    sweptAt = t;
    for (const [id, e] of entries) if (t - e.usedAt >= idleMs) entries.delete(id);
  };

  const read = async (id: string, pid: number): Promise<RunningFacts> => ({
    user: readUser(pid, id),
    // a cgroup that cannot be read enforces nothing crishim can show
    hugepages: await hugetlb.read(pid, id).catch(() => []),
  });

  return {
    get(id, pid) {
      const t = now();
      sweep(t);
      let e = entries.get(id);
      if (!e || e.pid !== pid) {
        e = { pid, facts: read(id, pid), usedAt: t };
        entries.set(id, e);
      }
      e.usedAt = t;
      return e.facts;
    },
    hugetlb: {
      read: (pid, id) => hugetlb.read(pid, id),
      async apply(pid, id, limits, log) {
        // before and after: a status read during the write must not outlive it
        entries.delete(id);
        try {
          return await hugetlb.apply(pid, id, limits, log);
        } finally {
          entries.delete(id);
        }
      },
    },
  };
}
