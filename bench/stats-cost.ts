/**
 * The `stats-cost` section: CPU time crishim spends on one ListPodSandboxStats and one
 * ListContainerStats call at N pods (`--pods=N`, 110 by default: the kubelet's max-pods).
 * CPU time, not wall time: on a shared machine another process's load stretches the
 * wall clock of a call but not the CPU the daemon burns on it. Each call is made alone,
 * further apart than the collector's sample reuse window, so every call reads every file.
 * Profile what it measures with CRISHIM_BENCH_NODE_FLAGS=--cpu-prof (see bench.ts).
 */
import { cpuNs, pct } from './measure';

export interface StatsCostTarget {
  pid: number;
  call<T>(method: string, req: unknown): Promise<T>;
  runPod(): Promise<string>;
  removePod(id: string): Promise<void>;
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
  const pods: string[] = [];
  try {
    for (let i = 0; i < sizes.pods; i += 8) {
      await Promise.all(Array.from({ length: Math.min(8, sizes.pods - i) }, async () => pods.push(await t.runPod())));
    }
    // first sight of each container: facts, CPU rate baselines, writable-layer walks
    await t.call('ListContainerStats', {});
    await t.call('ListPodSandboxStats', {});
    await sleep(2000);
    const pod = await callCpu(t, 'ListPodSandboxStats', sizes.calls);
    const ctr = await callCpu(t, 'ListContainerStats', sizes.calls);
    const f = (xs: number[]): string => `${pct(xs, 50).toFixed(1)} / ${Math.min(...xs).toFixed(1)} ms`;
    record(
      `stats-cost, ${sizes.pods} pods: CPU per ListPodSandboxStats, p50 / min of ${sizes.calls}`,
      f(pod),
      '-',
      '-',
    );
    record(`stats-cost, ${sizes.pods} pods: CPU per ListContainerStats, p50 / min of ${sizes.calls}`, f(ctr), '-', '-');
  } finally {
    for (let i = 0; i < pods.length; i += 8)
      await Promise.all(pods.slice(i, i + 8).map((id) => t.removePod(id).catch(() => undefined)));
  }
}
