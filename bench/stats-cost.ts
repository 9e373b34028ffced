/**
 * The `stats-cost` section: CPU time crishim spends on one ListPodSandboxStats and one
 * ListContainerStats call at N pods (`--pods=N`, 110 by default: the kubelet's max-pods).
 * CPU time, not wall time: on a shared machine another process's load stretches the
 * wall clock of a call but not the CPU the daemon burns on it. Each call is made alone,
 * further apart than the collector's sample reuse window, so every call reads every file.
 * Profile what it measures with CRISHIM_BENCH_NODE_FLAGS=--cpu-prof (see bench.ts).
 * The calls measured first still pay for V8 optimizing the stats path on its helper thread
 * (some calls ~10-30 ms of compiling, over about 20 calls); with `tieredUp` set, the section
 * goes on to that many calls in all and reports the last ten apart: the cost once that is done.
 * It runs twice where the target can: pods under Docker's shared parent (their totals are
 * the sum of their containers), then each pod in a cgroup of its own, as the kubelet makes
 * them (`linux.cgroup_parent`; read as the pod cgroup).
 */
import { pct, spacedCallCpu, waitQuiet, type CallCpu } from './measure';
import { PodCgroups } from './pod-cgroups';

export interface StatsCostTarget {
  pid: number;
  call<T>(method: string, req: unknown): Promise<T>;
  runPod(): Promise<string>;
  removePod(id: string): Promise<void>;
  /** Starts a pod whose sandbox has this cgroup parent (cgroupfs driver), when the target can. */
  runPodIn?(cgroupParent: string): Promise<string>;
}

type Record4 = (what: string, crishim: string, raw: string, ratio: string) => void;

/** Pods, calls measured first, and (0: none) the calls in all after which ten more are measured apart. */
export interface StatsCostSizes {
  pods: number;
  calls: number;
  tieredUp: number;
}

/** The calls measured once V8's tier-up of the stats path is over (see tieredUp). */
const SETTLED_CALLS = 10;

export async function statsCost(t: StatsCostTarget, sizes: StatsCostSizes, record: Record4): Promise<void> {
  await costAt(t, sizes, record, '', () => t.runPod());
  const runPodIn = t.runPodIn;
  if (!runPodIn) return;
  const cgroups = new PodCgroups('stats-cost');
  try {
    await costAt(t, sizes, record, ', a cgroup each', () => runPodIn(cgroups.next()));
  } finally {
    await cgroups.removeAll();
  }
}

async function costAt(
  t: StatsCostTarget,
  sizes: StatsCostSizes,
  record: Record4,
  shape: string,
  runPod: () => Promise<string>,
): Promise<void> {
  const pods: string[] = [];
  try {
    for (let i = 0; i < sizes.pods; i += 8) {
      await Promise.all(Array.from({ length: Math.min(8, sizes.pods - i) }, async () => pods.push(await runPod())));
    }
    await t.call('ListContainerStats', {});
    await t.call('ListPodSandboxStats', {});
    // the pods' making leaves V8 work for seconds: the calls are timed once the daemon is quiet
    await waitQuiet(t.pid);
    // apart by more than the collector's 500 ms reuse window: each call reads every file
    const costOf = (method: string, calls: number): Promise<CallCpu> =>
      spacedCallCpu(t.pid, () => t.call(method, {}), calls, 600);
    const f = (c: CallCpu): string =>
      `${pct(c.all, 50).toFixed(1)} / ${Math.min(...c.all).toFixed(1)} ms (main ${pct(c.main, 50).toFixed(1)})`;
    const tag = `stats-cost, ${sizes.pods} pods${shape}`;
    const methods = ['ListPodSandboxStats', 'ListContainerStats'];
    for (const method of methods) {
      const first = await costOf(method, sizes.calls);
      record(`${tag}: CPU per ${method}, p50 / min of ${sizes.calls} (main thread p50)`, f(first), '-', '-');
    }
    if (sizes.tieredUp <= sizes.calls + SETTLED_CALLS) return;
    for (const method of methods) {
      await costOf(method, sizes.tieredUp - sizes.calls - SETTLED_CALLS);
      const settled = await costOf(method, SETTLED_CALLS);
      const what = `calls ${sizes.tieredUp - SETTLED_CALLS + 1}-${sizes.tieredUp}`;
      record(`${tag}: CPU per ${method}, tiered up (${what}), p50 / min (main p50)`, f(settled), '-', '-');
    }
  } finally {
    for (let i = 0; i < pods.length; i += 8)
      await Promise.all(pods.slice(i, i + 8).map((id) => t.removePod(id).catch(() => undefined)));
  }
}
