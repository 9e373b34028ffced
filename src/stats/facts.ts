import type * as Docker from '../docker/types';
import type { DockerEngine } from '../docker/engine';
import type { Logger } from '../logging/logger';
import { isNotFound } from '../errors';
import { readProcCgroup, type CgroupPaths } from './cgroup-path';
import type { ContainerFacts, Target } from './sample';

/** peek()'s answer when facts need an asynchronous lookup. */
export const MISS = Symbol('facts miss');

/**
 * The cgroup of a container given a cgroup parent (a kubelet pod's pause container), else
 * undefined. Such a pause is sampled for its process count only, its pod being read as that
 * parent; its own usage is read only when the parent turns out to be shared (pod-usage.ts).
 */
export function cgroupUnderParent(f: ContainerFacts | undefined): CgroupPaths | undefined {
  return f?.cgroup && f.cgroupParent ? f.cgroup : undefined;
}

/** A source of inspect answers kept current by Docker events (the state view): asking it costs no Docker call. */
export interface CurrentInspects {
  get(id: string): Promise<Docker.ContainerInspectInfo | undefined>;
}

export interface FactsCache {
  /**
   * Facts of a container, with live cgroup paths when it runs. `running` comes
   * from the caller's list call: a stopped container costs no file read, a
   * running one one read of /proc/<pid>/cgroup; Docker is asked only on a miss
   * (first sight, restart, pid gone).
   */
  resolve(id: string, running: boolean): Promise<ContainerFacts | undefined>;
  /**
   * The same without waiting, when it can be told synchronously (the target carries its
   * inspect answer, or cached facts are still current); MISS when only resolve() can tell.
   */
  peek(t: Target): ContainerFacts | undefined | typeof MISS;
  forget(keep: (id: string) => boolean): void;
}

export interface FactsOptions {
  /** Where /proc is (tests point it at a fixture tree). */
  proc?: string;
  /** The state view: facts come from its inspects instead of Docker's (see createViewFacts). */
  view?: CurrentInspects;
  /**
   * Told when facts holding a cgroup stop being the container's (it stopped, restarted or
   * went), so what is kept open for that cgroup can be closed.
   */
  released?: (id: string, facts: ContainerFacts) => void;
}

export function createFactsCache(docker: DockerEngine, logger: Logger, opts: FactsOptions = {}): FactsCache {
  const proc = opts.proc ?? '/proc';
  const released = releaser(opts.released);
  if (opts.view) return createViewFacts(opts.view, logger, proc, released);
  const cache = new Map<string, ContainerFacts>();
  const inFlight = new Map<string, Promise<ContainerFacts | undefined>>();
  /** Ids Docker said it does not know (a sandbox left only as a checkpoint): not asked again for a while. */
  const gone = new Map<string, number>();
  const GONE_TTL_MS = 30_000;

  const learn = async (id: string): Promise<ContainerFacts | undefined> => {
    let info: Docker.ContainerInspectInfo;
    try {
      info = await docker.inspectContainer(id);
    } catch (err) {
      logger.debug('stats: cannot inspect container', { containerId: id, error: (err as Error).message });
      if (isNotFound(err)) gone.set(id, Date.now());
      released(id, cache.get(id));
      cache.delete(id);
      return undefined;
    }
    const pid = info.State.Running ? info.State.Pid : 0;
    const read = pid > 0 ? readProcCgroup(pid, proc) : undefined;
    const facts = factsOf(info, pid, read);
    released(id, cache.get(id), facts);
    cache.set(id, facts);
    return facts;
  };

  const learnOnce = (id: string): Promise<ContainerFacts | undefined> => {
    const goneAt = gone.get(id);
    if (goneAt !== undefined && Date.now() - goneAt < GONE_TTL_MS) return Promise.resolve(undefined);
    gone.delete(id);
    let p = inFlight.get(id);
    if (!p) {
      p = learn(id).finally(() => inFlight.delete(id));
      inFlight.set(id, p);
    }
    return p;
  };

  /** A stopped container has no cgroup: what was kept open for the one it had is let go. */
  const asStopped = (id: string, known: ContainerFacts): ContainerFacts => {
    if (known.pid === 0 && !known.cgroup) return known;
    const facts = { ...known, pid: 0, cgroupText: undefined, cgroup: undefined };
    released(id, known, facts);
    cache.set(id, facts);
    return facts;
  };

  return {
    peek({ id, running }) {
      const known = cache.get(id);
      if (!known) return MISS;
      if (!running) return asStopped(id, known);
      if (known.pid > 0 && readProcCgroup(known.pid, proc)?.text === known.cgroupText) return known;
      return MISS;
    },
    async resolve(id, running) {
      const known = cache.get(id);
      if (!running) {
        // a stopped container has no cgroup; its upper dir is still worth knowing
        if (known) return asStopped(id, known);
        const f = await learnOnce(id);
        return f && asStopped(id, f);
      }
      if (known && known.pid > 0) {
        const now = readProcCgroup(known.pid, proc);
        if (now && now.text === known.cgroupText) return known;
      }
      return learnOnce(id);
    },
    forget(keep) {
      // deleting the entry being visited is safe in a Map's iteration
      for (const [id, f] of cache) {
        if (keep(id)) continue;
        released(id, f);
        cache.delete(id);
      }
      for (const id of gone.keys()) if (!keep(id)) gone.delete(id);
    },
  };
}

/** Calls `hook` for old facts whose cgroup the new facts (none: the container went) do not carry on. */
function releaser(
  hook: FactsOptions['released'],
): (id: string, old: ContainerFacts | undefined, next?: ContainerFacts) => void {
  return (id, old, next) => {
    if (hook && old?.cgroup && old.cgroup !== next?.cgroup) hook(id, old);
  };
}

function factsOf(
  info: Docker.ContainerInspectInfo,
  pid: number,
  read: { text: string; paths: CgroupPaths } | undefined,
): ContainerFacts {
  return {
    pid: read ? pid : 0,
    cgroupText: read?.text,
    cgroup: read?.paths,
    upperDir: (info.GraphDriver?.Data as Record<string, string> | undefined)?.UpperDir,
    cgroupParent: info.HostConfig?.CgroupParent ?? '',
    hostNetwork: info.HostConfig?.NetworkMode === 'host',
  };
}

/**
 * Facts from the state view: its inspect is current (events re-inspect a container that
 * starts, dies or restarts), so a container's cgroup paths are read from /proc once per
 * start of its process, not once per call.
 */
function createViewFacts(
  view: CurrentInspects,
  logger: Logger,
  proc: string,
  released: ReturnType<typeof releaser>,
): FactsCache {
  /** Per container: the process start the paths were read for, and the facts. */
  const cache = new Map<string, { startedAt: string; facts: ContainerFacts }>();
  const factsFor = (id: string, running: boolean, info: Docker.ContainerInspectInfo): ContainerFacts => {
    const pid = running && info.State.Running ? info.State.Pid : 0;
    const known = cache.get(id);
    if (known && known.startedAt === info.State.StartedAt && known.facts.pid === pid) return known.facts;
    const read = pid > 0 ? readProcCgroup(pid, proc) : undefined;
    const facts = factsOf(info, pid, read);
    // stopped or restarted: the cgroup read before is not this container's any more
    released(id, known?.facts, facts);
    // a process that vanished between the inspect and the read is not remembered
    if (pid === 0 || read) cache.set(id, { startedAt: info.State.StartedAt, facts });
    return facts;
  };
  return {
    peek: (t) => (t.info ? factsFor(t.id, t.running, t.info) : MISS),
    async resolve(id, running) {
      let info: Docker.ContainerInspectInfo | undefined;
      try {
        info = await view.get(id);
      } catch (err) {
        logger.debug('stats: cannot look the container up', { containerId: id, error: (err as Error).message });
      }
      if (!info) {
        released(id, cache.get(id)?.facts);
        cache.delete(id);
        return undefined;
      }
      return factsFor(id, running, info);
    },
    forget(keep) {
      for (const [id, known] of cache) {
        if (keep(id)) continue;
        released(id, known.facts);
        cache.delete(id);
      }
    },
  };
}
