import { mapLimit } from './pool';
import type { Sample, Target } from './sample';

export interface SettleOptions {
  /** A reading (may be a reused one). */
  read(t: Target): Promise<Sample>;
  /** A fresh reading, for the second look. */
  reread(t: Target): Promise<Sample>;
  /** Whether a CPU rate can already be told for this id (an earlier reading exists). */
  hasHistory(id: string): boolean;
  settleMs: number;
  concurrency: number;
  signal?: AbortSignal;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
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

/**
 * Reads every target (bounded concurrency), then reads again after `settleMs`
 * the running ones seen for the first time, so that they too have a CPU rate:
 * the kubelet shows a new container's CPU from its first stats call on.
 */
export async function readSettled(targets: readonly Target[], o: SettleOptions): Promise<Sample[]> {
  const firstSight = new Set<string>();
  for (const t of targets) if (t.running && !o.hasHistory(t.id)) firstSight.add(t.id);
  const out = await mapLimit(targets, o.concurrency, o.read);
  if (firstSight.size === 0 || o.settleMs <= 0) return out;
  const again = out.filter((s) => firstSight.has(s.id) && s.usage.cpuUsageNanos !== undefined);
  if (again.length === 0) return out;
  await sleep(o.settleMs, o.signal);
  const redo = new Map(
    (await mapLimit(again, o.concurrency, (s) => o.reread({ id: s.id, running: true }))).map((s) => [s.id, s]),
  );
  return out.map((s) => redo.get(s.id) ?? s);
}
