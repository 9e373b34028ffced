/**
 * The `stats-cost` section: CPU time crishim spends on one ListPodSandboxStats and one
 * ListContainerStats call at N pods (`--pods=N`, 110 by default: the kubelet's max-pods).
 * CPU time, not wall time: on a shared machine another process's load stretches the
 * wall clock of a call but not the CPU the daemon burns on it. Each call is made alone,
 * further apart than the collector's sample reuse window, so every call reads every file.
 * Profile what it measures with CRISHIM_BENCH_NODE_FLAGS=--cpu-prof (see bench.ts).
 * It runs twice where the target can: pods under Docker's shared parent (their totals are
 * the sum of their containers), then each pod in a cgroup of its own, as the kubelet makes
 * them (`linux.cgroup_parent`; read as the pod cgroup).
 */
import { cpuNs, pct } from './measure';
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

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CPU ms of each of `calls` calls of `method`, taken one at a time. */
async function callCpu(t: StatsCostTarget, method: string, calls: number): Promise<number[]> {
  const xs: number[] = [];
  for (let i = 0; i < calls; i++) {
    // past the collector's 500 ms reuse window
    await sleep(600);
    const c0 = cpuNs(t.pid);
    await t.call(method, {});
    xs.push((cpuNs(t.pid) - c0) / 1e6);
  }
  return xs;
}

export async function statsCost(
  t: StatsCostTarget,
  sizes: { pods: number; calls: number },
  record: Record4,
): Promise<void> {
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
  sizes: { pods: number; calls: number },
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
    await sleep(2000);
    const pod = await callCpu(t, 'ListPodSandboxStats', sizes.calls);
    const ctr = await callCpu(t, 'ListContainerStats', sizes.calls);
    const f = (xs: number[]): string => `${pct(xs, 50).toFixed(1)} / ${Math.min(...xs).toFixed(1)} ms`;
    const tag = `stats-cost, ${sizes.pods} pods${shape}`;
    record(`${tag}: CPU per ListPodSandboxStats, p50 / min of ${sizes.calls}`, f(pod), '-', '-');
    record(`${tag}: CPU per ListContainerStats, p50 / min of ${sizes.calls}`, f(ctr), '-', '-');
  } finally {
    for (let i = 0; i < pods.length; i += 8)
      await Promise.all(pods.slice(i, i + 8).map((id) => t.removePod(id).catch(() => undefined)));
  }
}
