/**
 * The `cycles` section: is crishim's memory flat over pod churn? It runs N pod
 * lifecycles (RunPodSandbox + CreateContainer + StartContainer + StopPodSandbox +
 * RemovePodSandbox), a few in parallel, against a daemon of its own, while a
 * kubelet-shaped background load relists every second and asks for stats every
 * 10 s (so the view, the stats caches and the log followers all see every pod come
 * and go). At cycle 0 and at 1/10, 1/2 and all of N it lets the cycles in flight
 * finish, waits a second, and reads the daemon's RSS and (when the daemon was
 * started with --expose-gc and CRISHIM_MEMORY_REPORT) its heap used after a full GC.
 *
 * The first tenth is the warm-up (JIT, pools, caches filling); after it, growth
 * over the rest is what a leak looks like: target "flat: growth <= 10% after warm-up".
 * Open file descriptors are counted at the same marks, after one more stats round: every
 * pod is gone then, so what a pod held (its cgroup files and /proc/<pid>/net/dev, log
 * files, Docker streams) must be closed, or a node would run out of them after weeks of churn.
 */
import { mapLimit } from './kubelet-load';
import { openFds, rssMiB } from './measure';

type Record4 = (what: string, crishim: string, raw: string, ratio: string) => void;

export interface CycleTarget {
  pid: number;
  call<T>(method: string, req: unknown): Promise<T>;
  /** RunPodSandbox + CreateContainer + StartContainer; answers the sandbox id. */
  runPod(): Promise<string>;
  /** StopPodSandbox + RemovePodSandbox. */
  removePod(id: string): Promise<void>;
  /** The daemon's heap used after a forced GC (MiB), when it can report one. */
  heapUsedMiB(): Promise<number | undefined>;
  /** Containers, checkpoints or IPs the cycles left behind. */
  leftovers(): Promise<number>;
}

export interface CycleSizes {
  cycles: number;
  parallel: number;
  /** Background stats round period. */
  statsEveryMs: number;
}

/** The growth allowed after the warm-up tenth. */
export const FLAT_GROWTH = 0.1;

/** Open fds allowed above the warm-up mark: connections the client and Docker pools happen to hold. */
export const FD_SLACK = 8;

interface Mark {
  cycle: number;
  rss: number;
  heap: number | undefined;
  fds: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Relists every second and reads stats every `statsEveryMs` until stopped; counts failures. */
function backgroundLoad(t: CycleTarget, statsEveryMs: number): { stop(): Promise<number> } {
  let running = true;
  let errors = 0;
  const loop = async (periodMs: number, fn: () => Promise<unknown>): Promise<void> => {
    while (running) {
      await fn().catch(() => errors++);
      for (let waited = 0; running && waited < periodMs; waited += 100) await sleep(100);
    }
  };
  const done = Promise.all([
    loop(1000, () => Promise.all([t.call('ListPodSandbox', {}), t.call('ListContainers', {})])),
    loop(statsEveryMs, () => Promise.all([t.call('ListContainerStats', {}), t.call('ListPodSandboxStats', {})])),
  ]);
  return {
    async stop() {
      running = false;
      await done;
      return errors;
    },
  };
}

export async function cycles(t: CycleTarget, sizes: CycleSizes, record: Record4): Promise<void> {
  const n = sizes.cycles;
  const checkpoints = [...new Set([0, Math.round(n / 10), Math.round(n / 2), n])];
  const marks: Mark[] = [];
  const sample = async (cycle: number): Promise<void> => {
    // the cycles in flight have finished; let their follow-up work (events, log followers) settle
    await sleep(1000);
    const rss = rssMiB(t.pid);
    const heap = await t.heapUsedMiB();
    // the stats collector lets a gone container's cgroup files go at its next call, as the kubelet's every 10 s
    await Promise.all([t.call('ListContainerStats', {}), t.call('ListPodSandboxStats', {})]);
    marks.push({ cycle, rss, heap, fds: openFds(t.pid) });
  };
  let failures = 0;
  let firstFailure = '';
  const background = backgroundLoad(t, sizes.statsEveryMs);
  const t0 = Date.now();
  let bgErrors: number;
  try {
    let done = 0;
    for (const upTo of checkpoints) {
      await mapLimit(upTo - done, sizes.parallel, async () => {
        try {
          await t.removePod(await t.runPod());
        } catch (err) {
          failures++;
          firstFailure ||= (err as Error).message;
        }
      });
      done = upTo;
      await sample(upTo);
    }
  } finally {
    bgErrors = await background.stop();
  }
  const seconds = (Date.now() - t0) / 1000;
  const leaks = await t.leftovers();

  const warm = marks.find((m) => m.cycle === Math.round(n / 10)) ?? marks[0];
  const last = marks[marks.length - 1];
  const growth = (from: number, to: number): string => `${((to / from - 1) * 100).toFixed(1)} %`;
  const verdict = (from: number, to: number): string =>
    `flat: growth <= ${FLAT_GROWTH * 100}% after warm-up: ${growth(from, to)} (${to / from - 1 <= FLAT_GROWTH ? 'ok' : 'NOT MET'})`;
  const at = marks.map((m) => m.cycle).join(' / ');
  const tag = `cycles: ${n} pod create/remove cycles, ${sizes.parallel} in parallel (${seconds.toFixed(0)} s)`;
  record(
    `${tag}: RSS at cycle ${at}`,
    marks.map((m) => `${m.rss.toFixed(1)}`).join(' / ') + ' MiB',
    '-',
    verdict(warm.rss, last.rss),
  );
  if (marks.every((m) => m.heap !== undefined)) {
    const heap = (m: Mark): number => m.heap ?? NaN;
    record(
      `${tag}: heap used after a forced GC at cycle ${at}`,
      marks.map((m) => heap(m).toFixed(1)).join(' / ') + ' MiB',
      '-',
      verdict(heap(warm), heap(last)),
    );
  } else {
    record(`${tag}: heap used after a forced GC`, 'not reported (daemon without --expose-gc)', '-', '-');
  }
  const fdGrowth = last.fds - warm.fds;
  record(
    `${tag}: open fds at cycle ${at}`,
    marks.map((m) => m.fds).join(' / '),
    '-',
    `no growth after warm-up (<= +${FD_SLACK}): ${fdGrowth >= 0 ? '+' : ''}${fdGrowth} (${fdGrowth <= FD_SLACK ? 'ok' : 'NOT MET'})`,
  );
  record(
    `${tag}: failed cycles / leftovers / background call errors`,
    `${failures} / ${leaks} / ${bgErrors}`,
    '-',
    failures || leaks ? `FAILURES${firstFailure ? ` (${firstFailure.slice(0, 80)})` : ''}` : 'ok',
  );
}
