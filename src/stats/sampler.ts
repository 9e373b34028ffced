import type { Logger } from '../logging/logger';
import { readCgroupUsage } from './cgroup';
import { cgroupUnderParent, MISS, type FactsCache } from './facts';
import { rateNow, type RateTracker } from './rate';
import { wallNanos, type ContainerFacts, type Sample, type Target, type TargetKind } from './sample';
import type { CgroupUsage, UsageWanted } from './usage';
import type { LayerUsageCache } from './writable-layer';

/** What reading one container takes: where its facts, CPU history and layer sizes are kept. */
export interface SampleSources {
  facts: FactsCache;
  rates: RateTracker;
  layers: LayerUsageCache;
  cgroupRoot: string;
  logger: Logger;
}

/** A pause container's limit is reported nowhere; a container's process count only in pod totals (read there). */
const WANTED: Record<TargetKind, UsageWanted> = { container: { pids: false }, sandbox: { limit: false } };

/**
 * One reading of one container whose facts are known: its cgroup files, the CPU rate since
 * its previous reading, and the last finished walk of its writable layer (never waited for:
 * a container seen for the first time reports no layer usage until the walk is done).
 */
export function sampleWith(src: SampleSources, t: Target, kind: TargetKind, f: ContainerFacts | undefined): Sample {
  const timestamp = wallNanos();
  let usage: CgroupUsage = {};
  // a pause under a cgroup parent is read by its pod, from the pod cgroup or its own (pod-usage.ts)
  const readByPod = kind === 'sandbox' && cgroupUnderParent(f) !== undefined;
  if (!readByPod && f?.cgroup) usage = readCgroupUsage(f.cgroup, src.cgroupRoot, WANTED[kind]);
  const nanoCores = rateNow(src.rates, t.id, usage.cpuUsageNanos);
  let writable: Sample['writable'];
  // a pause container writes nothing worth a walk
  if (kind === 'container' && f?.upperDir) {
    const layer = src.layers.latest(t.id, f.upperDir);
    if (layer?.truncated)
      src.logger.debug('stats: writable layer walk hit its bound', { containerId: t.id, inodes: layer.inodes });
    if (layer) writable = { bytes: layer.bytes, inodes: layer.inodes };
  }
  return { id: t.id, timestamp, usage, nanoCores, writable, facts: f };
}

/** A reading without waiting, or undefined when the facts need an asynchronous lookup first. */
export function readSampleNow(src: SampleSources, t: Target, kind: TargetKind): Sample | undefined {
  const f = src.facts.peek(t);
  return f === MISS ? undefined : sampleWith(src, t, kind, f);
}

/** One reading of one container, looking its facts up when they are not at hand. */
export async function readSample(src: SampleSources, t: Target, kind: TargetKind): Promise<Sample> {
  return readSampleNow(src, t, kind) ?? sampleWith(src, t, kind, await src.facts.resolve(t.id, t.running));
}
