import { mapLimit } from './pool';
import type { Sample, Target } from './sample';

export interface SettleOptions {
  /** A reading without waiting (may be a reused one), or undefined when only read() can make it. */
  readNow?(t: Target): Sample | undefined;
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
 * Reads every target, in one synchronous pass where readNow can (cgroup files are read
 * synchronously: a promise per container only added garbage), the rest with bounded
 * concurrency; then reads again after `settleMs` the running ones seen for the first time,
 * so that they too have a CPU rate: the kubelet shows a new container's CPU from its first
 * stats call on.
 */
export async function readSettled(targets: readonly Target[], o: SettleOptions): Promise<Sample[]> {
  const firstSight = new Set<string>();
  for (const t of targets) if (t.running && !o.hasHistory(t.id)) firstSight.add(t.id);
  const out = await readAll(targets, o.readNow, o.read, o.concurrency);
  if (firstSight.size === 0 || o.settleMs <= 0) return out;
  // without the caller's inspect answer: after the pause it is looked up again
  const again: Target[] = out
    .filter((s) => firstSight.has(s.id) && s.usage.cpuUsageNanos !== undefined)
    .map((s) => ({ id: s.id, running: true }));
  if (again.length === 0) return out;
  await sleep(o.settleMs, o.signal);
  const redo = new Map((await readAll(again, undefined, o.reread, o.concurrency)).map((s) => [s.id, s]));
  return out.map((s) => redo.get(s.id) ?? s);
}

async function readAll(
  targets: readonly Target[],
  now: ((t: Target) => Sample | undefined) | undefined,
  later: (t: Target) => Promise<Sample>,
  concurrency: number,
): Promise<Sample[]> {
  const out = new Array<Sample>(targets.length);
  const pending: number[] = [];
  targets.forEach((t, i) => {
    const s = now?.(t);
    if (s) out[i] = s;
    else pending.push(i);
  });
  if (pending.length > 0) {
    await mapLimit(pending, concurrency, async (i) => {
      out[i] = await later(targets[i]);
    });
  }
  return out;
}
