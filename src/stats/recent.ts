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
}

export function createRecentSamples(reuseMs: number, now: () => number = Date.now): RecentSamples {
  const recent = new Map<string, { at: number; running: boolean; sample: Sample }>();
  return {
    get(t) {
      const r = recent.get(t.id);
      return r && r.running === t.running && now() - r.at < reuseMs ? r.sample : undefined;
    },
    put(t, sample) {
      if (reuseMs > 0) recent.set(t.id, { at: now(), running: t.running, sample });
    },
    forget(keep) {
      for (const id of [...recent.keys()]) if (!keep(id)) recent.delete(id);
    },
  };
}
