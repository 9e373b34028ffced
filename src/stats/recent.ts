import type { Sample, Target } from './sample';

/**
 * Samples taken in the last `reuseMs`: the kubelet asks ListContainerStats and
 * ListPodSandboxStats back to back, and both need the same containers. A sample
 * is reused only for a target in the same state (a container that stopped is read).
 */
export interface RecentSamples {
  get(t: Target): Sample | undefined;
  put(t: Target, s: Sample): void;
  forget(keep: (id: string) => boolean): void;
  /** How many samples are held now. */
  held(): number;
}

export function createRecentSamples(reuseMs: number, now: () => number = Date.now): RecentSamples {
  const recent = new Map<string, { at: number; running: boolean; sample: Sample }>();
  /**
   * Samples past their window are dropped by a timer, not at the next round: held until then
   * (10 s under the kubelet) they outlive two scavenges, so V8 moves every round's samples to
   * its old space, where only a full GC frees them.
   */
  let expiry: NodeJS.Timeout | undefined;
  const expire = (): void => {
    expiry = undefined;
    const t = now();
    for (const [id, r] of recent) if (t - r.at >= reuseMs) recent.delete(id);
    if (recent.size > 0) schedule();
  };
  const schedule = (): void => {
    expiry = setTimeout(expire, reuseMs);
    expiry.unref();
  };
  return {
    get(t) {
      const r = recent.get(t.id);
      return r && r.running === t.running && now() - r.at < reuseMs ? r.sample : undefined;
    },
    put(t, sample) {
      if (reuseMs <= 0) return;
      recent.set(t.id, { at: now(), running: t.running, sample });
      if (!expiry) schedule();
    },
    forget(keep) {
      for (const id of [...recent.keys()]) if (!keep(id)) recent.delete(id);
    },
    held: () => recent.size,
  };
}
