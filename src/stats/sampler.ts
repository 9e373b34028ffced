import type { Logger } from '../logging/logger';
import { readCgroupUsage } from './cgroup';
import type { FactsCache } from './facts';
import type { RateTracker } from './rate';
import { wallNanos, type Sample, type Target, type TargetKind } from './sample';
import type { LayerUsageCache } from './writable-layer';

/** What reading one container takes: where its facts, CPU history and layer sizes are kept. */
export interface SampleSources {
  facts: FactsCache;
  rates: RateTracker;
  layers: LayerUsageCache;
  cgroupRoot: string;
  logger: Logger;
}

/**
 * One reading of one container: its cgroup files, the CPU rate since its previous
 * reading, and the last finished walk of its writable layer (never waited for: a
 * container seen for the first time reports no layer usage until the walk is done).
 */
export async function readSample(src: SampleSources, t: Target, kind: TargetKind): Promise<Sample> {
  const f = await src.facts.resolve(t.id, t.running);
  const timestamp = wallNanos();
  const usage = f?.cgroup ? await readCgroupUsage(f.cgroup, src.cgroupRoot) : {};
  const nanoCores =
    usage.cpuUsageNanos !== undefined
      ? src.rates.observe(t.id, { at: process.hrtime.bigint(), cpuNanos: usage.cpuUsageNanos })
      : undefined;
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
