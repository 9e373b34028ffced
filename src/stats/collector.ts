import type { DockerEngine } from '../docker/engine';
import { log, type Logger } from '../logging/logger';
import { childCgroups, DEFAULT_CGROUP_ROOT, keyPath, parentCgroup } from './cgroup-path';
import { readCgroupUsage } from './cgroup';
import { createFactsCache, type ContainerFacts, type CurrentInspects } from './facts';
import { readNetDev, type InterfaceUsage } from './netdev';
import { mapLimit } from './pool';
import { createRateTracker } from './rate';
import type { CgroupUsage } from './usage';
import { createLayerUsageCache, type LayerUsage } from './writable-layer';

export interface Sample {
  id: string;
  /** Wall-clock time of the reading, ns since the epoch (a decimal string, as CRI timestamps travel). */
  timestamp: string;
  usage: CgroupUsage;
  /** CPU use since the previous reading of the same container, in nanocores. */
  nanoCores?: number;
  writable?: { bytes: number; inodes: number };
  /** Facts the pod aggregation needs (cgroup paths, netns pid). */
  facts?: ContainerFacts;
}

export interface PodSample {
  timestamp: string;
  /** The pod cgroup's usage, or the sum of its containers' (pause included). */
  usage: CgroupUsage;
  nanoCores?: number;
  source: 'pod-cgroup' | 'sum';
  /** Interfaces of the pod netns; undefined when not ready or on the host network. */
  network?: InterfaceUsage[];
}

export interface Target {
  id: string;
  running: boolean;
}

export interface StatsCollector {
  /** Samples many containers (bounded concurrency); those seen for the first time get a second reading after a short pause so they too have a CPU rate. */
  containers(targets: Target[], signal?: AbortSignal): Promise<Sample[]>;
  /** Pod-level usage for a sandbox (its pause container) and its already sampled containers. */
  pod(sandbox: Target, members: Sample[], signal?: AbortSignal): Promise<PodSample>;
  /** Forgets what is cached about ids of a kind that are not in `ids` (call after an unfiltered list). */
  retain(ids: Set<string>, kind?: 'container' | 'sandbox'): void;
  /** One container (kept for callers that sample one at a time). */
  sample(id: string, running: boolean): Promise<Sample>;
  /** Interfaces of the netns a container's process lives in (the pod's, for a pause container). */
  network(id: string): Promise<InterfaceUsage[] | undefined>;
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

const wallNanos = (): string => (BigInt(Date.now()) * 1_000_000n).toString();

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

function sumUsage(all: CgroupUsage[]): CgroupUsage {
  const num = (f: (u: CgroupUsage) => number | undefined): number | undefined =>
    all.some((u) => f(u) !== undefined) ? all.reduce((acc, u) => acc + (f(u) ?? 0), 0) : undefined;
  return {
    cpuUsageNanos: all.some((u) => u.cpuUsageNanos !== undefined) ? all.reduce((acc, u) => acc + (u.cpuUsageNanos ?? 0n), 0n) : undefined,
    memoryUsage: num((u) => u.memoryUsage),
    workingSet: num((u) => u.workingSet),
    rss: num((u) => u.rss),
    pageFaults: num((u) => u.pageFaults),
    majorPageFaults: num((u) => u.majorPageFaults),
    pids: num((u) => u.pids),
  };
}

export function createStatsCollector(docker: DockerEngine, logger: Logger = log(), opts: CollectorOptions = {}): StatsCollector {
  const root = opts.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  const settleMs = opts.settleMs ?? 100;
  const concurrency = opts.concurrency ?? 16;
  const proc = opts.procRoot ?? '/proc';
  const facts = createFactsCache(docker, logger, proc, opts.view);
  const rates = createRateTracker();
  const layers = createLayerUsageCache();
  const kinds = new Map<string, 'container' | 'sandbox'>();
  const sources = new Map<string, PodSample['source']>();

  /** The last walk of the writable layer (never waited for: a container seen for the first time reports 0 until it is done). */
  const layerUsage = (id: string, dir: string | undefined): LayerUsage | undefined => {
    if (!dir) return undefined;
    const u = layers.latest(id, dir);
    if (u?.truncated) logger.debug('stats: writable layer walk hit its bound', { containerId: id, inodes: u.inodes });
    return u;
  };

  const sampleOne = async (t: Target, kind: 'container' | 'sandbox'): Promise<Sample> => {
    kinds.set(t.id, kind);
    const f = await facts.resolve(t.id, t.running);
    const timestamp = wallNanos();
    const usage = f?.cgroup ? await readCgroupUsage(f.cgroup, root) : {};
    const nanoCores = usage.cpuUsageNanos !== undefined ? rates.observe(t.id, { at: process.hrtime.bigint(), cpuNanos: usage.cpuUsageNanos }) : undefined;
    const layer = kind === 'container' ? layerUsage(t.id, f?.upperDir) : undefined;
    return { id: t.id, timestamp, usage, nanoCores, writable: layer && { bytes: layer.bytes, inodes: layer.inodes }, facts: f };
  };

  const reuseMs = opts.reuseMs ?? 0;
  const recent = new Map<string, { at: number; running: boolean; sample: Sample }>();
  const sampleOrReuse = async (t: Target, kind: 'container' | 'sandbox'): Promise<Sample> => {
    const now = Date.now();
    const r = recent.get(t.id);
    if (r && r.running === t.running && now - r.at < reuseMs) return r.sample;
    const s = await sampleOne(t, kind);
    if (reuseMs > 0) recent.set(t.id, { at: now, running: t.running, sample: s });
    return s;
  };

  /** Samples, then re-samples after `settleMs` those without a previous CPU reading. */
  const settled = async (targets: Target[], kind: 'container' | 'sandbox', signal?: AbortSignal): Promise<Sample[]> => {
    const firstSight = new Set(targets.filter((t) => t.running && !rates.has(t.id)).map((t) => t.id));
    const out = await mapLimit(targets, concurrency, (t) => sampleOrReuse(t, kind));
    const again = out.filter((s) => firstSight.has(s.id) && s.usage.cpuUsageNanos !== undefined);
    if (again.length === 0 || settleMs <= 0) return out;
    await sleep(settleMs, signal);
    const redo = new Map((await mapLimit(again, concurrency, (s) => sampleOne({ id: s.id, running: true }, kind))).map((s) => [s.id, s]));
    if (reuseMs > 0) for (const s of redo.values()) recent.set(s.id, { at: Date.now(), running: true, sample: s });
    return out.map((s) => redo.get(s.id) ?? s);
  };

  /**
   * The pod cgroup, when there is one of its own: the sandbox was given a
   * CgroupParent, every running member sits directly under the same parent, and
   * that parent holds nothing but this pod's containers. Docker's default
   * parent (/docker, system.slice) is shared by all containers, so there the
   * pod is the sum of its containers.
   */
  const podCgroup = async (pause: Sample, members: Sample[]) => {
    const pf = pause.facts;
    if (!pf?.cgroup || !pf.cgroupParent) return undefined;
    const parent = parentCgroup(pf.cgroup);
    const parentKey = keyPath(parent);
    if (!parentKey || parentKey === '/') return undefined;
    for (const m of members) {
      if (m.facts?.cgroup && keyPath(parentCgroup(m.facts.cgroup)) !== parentKey) return undefined;
    }
    const ids = [pause.id, ...members.map((m) => m.id)];
    const children = await childCgroups(parent, root);
    if (!children || !children.every((c) => ids.some((id) => c.includes(id)))) return undefined;
    return parent;
  };

  const readPod = async (sandbox: Target, pause: Sample, members: Sample[]): Promise<PodSample> => {
    const running = members.filter((m) => m.facts?.cgroup);
    const cg = sandbox.running ? await podCgroup(pause, running) : undefined;
    const timestamp = wallNanos();
    const network =
      sandbox.running && pause.facts && pause.facts.pid > 0 && !pause.facts.hostNetwork ? await readNetDev(pause.facts.pid, proc) : undefined;
    // process counts are read from the leaves: a parent's cgroup.procs lists none of its children's
    const pids = sumUsage([pause.usage, ...members.map((m) => m.usage)]).pids;
    if (cg) {
      const usage = { ...(await readCgroupUsage(cg, root)), pids };
      const nanoCores = usage.cpuUsageNanos !== undefined ? rates.observe(`pod:${sandbox.id}`, { at: process.hrtime.bigint(), cpuNanos: usage.cpuUsageNanos }) : undefined;
      return { timestamp, usage, nanoCores, source: 'pod-cgroup', network };
    }
    const all = [pause, ...members];
    const withRate = all.filter((s) => s.nanoCores !== undefined);
    const nanoCores = withRate.length > 0 ? withRate.reduce((acc, s) => acc + (s.nanoCores ?? 0), 0) : undefined;
    return { timestamp, usage: sumUsage(all.map((s) => s.usage)), nanoCores, source: 'sum', network };
  };

  return {
    containers: (targets, signal) => settled(targets, 'container', signal),
    async pod(sandbox, members, signal) {
      const [pause] = await settled([sandbox], 'sandbox', signal);
      const first = sandbox.running && !rates.has(`pod:${sandbox.id}`);
      let pod = await readPod(sandbox, pause, members);
      if (first && pod.source === 'pod-cgroup' && pod.nanoCores === undefined && settleMs > 0) {
        await sleep(settleMs, signal);
        pod = await readPod(sandbox, pause, members);
      }
      if (sandbox.running && sources.get(sandbox.id) !== pod.source) {
        // once per pod and change: which way its totals are made explains its numbers
        logger.debug(`stats: pod totals from ${pod.source === 'pod-cgroup' ? 'the pod cgroup' : 'the sum of its containers'}`, { podSandboxId: sandbox.id });
        sources.set(sandbox.id, pod.source);
      }
      return pod;
    },
    retain(ids, kind = 'container') {
      const keep = (id: string): boolean => kinds.get(id) !== kind || ids.has(id);
      facts.forget(keep);
      for (const id of [...recent.keys()]) if (!keep(id)) recent.delete(id);
      layers.forget(keep);
      rates.prune((key) => (key.startsWith('pod:') ? kind !== 'sandbox' || ids.has(key.slice(4)) : keep(key)));
      for (const [id, k] of [...kinds]) {
        if (k === kind && !ids.has(id)) {
          kinds.delete(id);
          sources.delete(id);
        }
      }
    },
    sample: (id, running) => sampleOne({ id, running }, 'container'),
    async network(id) {
      const f = await facts.resolve(id, true);
      return f && f.pid > 0 && !f.hostNetwork ? readNetDev(f.pid, proc) : undefined;
    },
  };
}
