import type { DockerEngine } from '../docker/engine';
import { log, type Logger } from '../logging/logger';
import { cgroupDirs, DEFAULT_CGROUP_ROOT, parentCgroup } from './cgroup-path';
import { cgroupUnderParent, createFactsCache, type CurrentInspects } from './facts';
import { closeHeldIn } from './files';
import { releaseNetDev } from './netdev';
import { netnsPid, pruneOwnCgroups, readPodUsage, type OwnCgroupMemo } from './pod-usage';
import { createRateTracker } from './rate';
import { createRecentSamples } from './recent';
import type { ContainerFacts, PodSample, Sample, Target, TargetKind } from './sample';
import { readSample, readSampleNow, type SampleSources } from './sampler';
import { readSettled, sleep } from './settle';
import { createLayerUsageCache } from './writable-layer';

export type { PodSample, Sample, Target } from './sample';

export interface StatsCollector {
  /** Samples many containers (bounded concurrency); those seen for the first time get a second reading after a short pause so they too have a CPU rate. */
  containers(targets: Target[], signal?: AbortSignal): Promise<Sample[]>;
  /** Pod-level usage for a sandbox (its pause container) and its already sampled containers. */
  pod(sandbox: Target, members: Sample[], signal?: AbortSignal): Promise<PodSample>;
  /** The same for many pods at once: their pause containers are read as one batch (one settle pause, not one per pod). */
  pods(pods: ReadonlyArray<{ sandbox: Target; members: Sample[] }>, signal?: AbortSignal): Promise<PodSample[]>;
  /**
   * Forgets what is cached about ids of a kind that are not in `ids` (call after an unfiltered
   * list). `ids` is never changed once passed: the same set again is known to need nothing.
   */
  retain(ids: ReadonlySet<string>, kind?: TargetKind): void;
  /** One container (kept for callers that sample one at a time). */
  sample(id: string, running: boolean): Promise<Sample>;
}

export interface CollectorOptions {
  cgroupRoot?: string;
  /** Where /proc is (tests point it at a fixture tree). */
  procRoot?: string;
  /** Pause before the second reading of a container seen for the first time. */
  settleMs?: number;
  concurrency?: number;
  /**
   * A container sampled this recently is not read again: the kubelet asks ListContainerStats and
   * ListPodSandboxStats back to back, and both need the same containers. 0 (the default) always reads.
   */
  reuseMs?: number;
  /** The state view: container facts come from it instead of a Docker inspect (see facts.ts). */
  view?: CurrentInspects;
}

/**
 * The stats RPCs' source of readings. It composes the parts, each in its own module:
 * facts (cgroup paths, pid, upper dir; facts.ts), one reading (sampler.ts), reuse
 * within a stats round (recent.ts), the second look at new containers (settle.ts),
 * pod totals (pod-usage.ts); and it forgets what belongs to containers that are gone.
 */
export function createStatsCollector(
  docker: DockerEngine,
  logger: Logger = log(),
  opts: CollectorOptions = {},
): StatsCollector {
  const proc = opts.procRoot ?? '/proc';
  const settleMs = opts.settleMs ?? 100;
  const concurrency = opts.concurrency ?? 16;
  const src: SampleSources = {
    facts: createFactsCache(docker, logger, { proc, view: opts.view, released: (id, f) => closeFilesOf(id, f) }),
    rates: createRateTracker(),
    layers: createLayerUsageCache(),
    cgroupRoot: opts.cgroupRoot ?? DEFAULT_CGROUP_ROOT,
    logger,
  };
  const recent = createRecentSamples(opts.reuseMs ?? 0);
  /** What each id was sampled as: retain() forgets one kind at a time. */
  const kinds = new Map<string, TargetKind>();
  /** How each pod's totals were made last time (logged when it changes). */
  const sources = new Map<string, PodSample['source']>();
  /**
   * A container's cgroup files once it stopped or went, and with a pause container under a
   * cgroup parent the pod cgroup's too (its totals are read there): closed now, not at the
   * idle sweep, so no fd pins a removed cgroup. A file still wanted is opened again.
   */
  function closeFilesOf(id: string, f: ContainerFacts): void {
    if (!f.cgroup) return;
    const dirs = cgroupDirs(f.cgroup, src.cgroupRoot);
    const own = kinds.get(id) === 'sandbox' ? cgroupUnderParent(f) : undefined;
    if (own) for (const d of cgroupDirs(parentCgroup(own), src.cgroupRoot)) dirs.add(d);
    closeHeldIn(dirs);
  }

  /** Counts samplings of an id as a kind it was not held as: a retain given the same ids as the last runs only if this moved. */
  let marked = 0;
  const mark = (id: string, kind: TargetKind): void => {
    if (kinds.get(id) === kind) return;
    kinds.set(id, kind);
    marked++;
  };
  /** Per kind, the ids the last retain kept and `marked` then. */
  const retained = new Map<TargetKind, { ids: ReadonlySet<string>; marked: number }>();

  const fresh = async (t: Target, kind: TargetKind): Promise<Sample> => {
    mark(t.id, kind);
    const s = await readSample(src, t, kind);
    recent.put(t, s);
    return s;
  };
  /** The synchronous path: the steady state, where the caller hands each target's inspect answer over. */
  const now = (t: Target, kind: TargetKind): Sample | undefined => {
    const reused = recent.get(t);
    if (reused) return reused;
    const s = readSampleNow(src, t, kind);
    if (s) {
      mark(t.id, kind);
      recent.put(t, s);
    }
    return s;
  };
  const settled = (targets: Target[], kind: TargetKind, signal?: AbortSignal): Promise<Sample[]> =>
    readSettled(targets, {
      readNow: (t) => now(t, kind),
      read: (t) => {
        const reused = recent.get(t);
        return reused ? Promise.resolve(reused) : fresh(t, kind);
      },
      reread: (t) => fresh(t, kind),
      hasHistory: (id) => src.rates.has(id),
      settleMs,
      concurrency,
      signal,
    });
  const podSources = {
    rates: src.rates,
    cgroupRoot: src.cgroupRoot,
    procRoot: proc,
    ownCgroups: new Map() as OwnCgroupMemo,
  };
  /** The pause pid each pod's interfaces were last read through: its kept fd holds the netns (netdev.ts). */
  const netnsPids = new Map<string, number>();
  const releaseNetns = (sandboxId: string): void => {
    const pid = netnsPids.get(sandboxId);
    if (pid === undefined) return;
    netnsPids.delete(sandboxId);
    releaseNetDev(pid, proc);
  };
  const trackNetns = (sandbox: Target, pause: Sample): void => {
    const pid = netnsPid(sandbox, pause);
    if (netnsPids.get(sandbox.id) === pid) return;
    // stopped, or a new pause process: the old one's namespace is let go at once
    releaseNetns(sandbox.id);
    if (pid > 0) netnsPids.set(sandbox.id, pid);
  };

  const pods: StatsCollector['pods'] = async (list, signal) => {
    const pauses = await settled(
      list.map((p) => p.sandbox),
      'sandbox',
      signal,
    );
    pruneOwnCgroups(podSources.ownCgroups, Date.now());
    const firstSight = list.map((p) => p.sandbox.running && !src.rates.has(`pod:${p.sandbox.id}`));
    list.forEach((p, i) => trackNetns(p.sandbox, pauses[i]));
    const out = list.map((p, i) => readPodUsage(podSources, p.sandbox, pauses[i], p.members));
    // a pod cgroup read for the first time has no CPU rate yet: one more look, as for containers
    const again = list
      .map((_, i) => i)
      .filter((i) => firstSight[i] && out[i].source === 'pod-cgroup' && out[i].nanoCores === undefined);
    if (again.length > 0 && settleMs > 0) {
      await sleep(settleMs, signal);
      for (const i of again) out[i] = readPodUsage(podSources, list[i].sandbox, pauses[i], list[i].members);
    }
    list.forEach(({ sandbox }, i) => {
      if (!sandbox.running || sources.get(sandbox.id) === out[i].source) return;
      // once per pod and change: which way its totals are made explains its numbers
      logger.debug(
        `stats: pod totals from ${out[i].source === 'pod-cgroup' ? 'the pod cgroup' : 'the sum of its containers'}`,
        { podSandboxId: sandbox.id },
      );
      sources.set(sandbox.id, out[i].source);
    });
    return out;
  };

  return {
    containers: (targets, signal) => settled(targets, 'container', signal),
    async pod(sandbox, members, signal) {
      return (await pods([{ sandbox, members }], signal))[0];
    },
    pods,
    retain(ids, kind = 'container') {
      // every stats call retains; in a steady state it is the same set (the same object: see the
      // interface) with nothing sampled since that the last retain did not see, so nothing to forget
      const last = retained.get(kind);
      if (last?.ids === ids && last.marked === marked) return;
      retained.set(kind, { ids, marked });
      const keep = (id: string): boolean => kinds.get(id) !== kind || ids.has(id);
      src.facts.forget(keep);
      recent.forget(keep);
      src.layers.forget(keep);
      src.rates.prune((key) => (key.startsWith('pod:') ? kind !== 'sandbox' || ids.has(key.slice(4)) : keep(key)));
      if (kind === 'sandbox') for (const id of netnsPids.keys()) if (!ids.has(id)) releaseNetns(id);
      // deleting the entry being visited is safe in a Map's iteration
      for (const [id, k] of kinds) {
        if (k === kind && !ids.has(id)) {
          kinds.delete(id);
          sources.delete(id);
        }
      }
    },
    sample: (id, running) => fresh({ id, running }, 'container'),
  };
}
