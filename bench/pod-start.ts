/**
 * The `pod-start` section: a burst of N pods started at once as a kubelet starts them
 * (RunPodSandbox, PodSandboxStatus, CreateContainer, StartContainer, then an ExecSync readiness
 * probe every 2 s until one answers 0), against the floor: the same Docker calls made directly in
 * the same run (create + start + inspect of the pause container with network `none`, the CNI ADD
 * chain of the same conflist on its netns, create + start of the container joined to it, one
 * Docker exec per probe). Then teardown of the burst (StopPodSandbox + RemovePodSandbox) against
 * `docker stop` of the container beside the CNI DEL chain, `docker stop` of the pause container
 * and both removed; and ExecSync under 30 concurrent probers against a bare Docker exec on the
 * same containers. Runtimes and floor alternate, and the round all Ready soonest counts (every
 * figure from it), so that a busy spell of the shared machine does not decide a ratio.
 */
import { setTimeout as sleep } from 'timers/promises';
import type Docker from 'dockerode';
import { cniAdd, cniDel, readConfList, type ConfList } from './cni-chain';
import { pct, processCpuMs } from './measure';
import { PodLogDirs } from './pod-logs';
import { stopQuietly } from './stop-pod';
import { table } from './runtime-compare';

export interface PodStartTarget {
  name: string;
  /** Its process, for CPU seconds (0: not measured). */
  pid: number;
  call<T>(method: string, req: unknown): Promise<T>;
  /** Docker API requests the runtime made so far, where counted. */
  dockerRequests?: () => number;
  /** The same by kind of request. */
  dockerRequestKinds?: () => Map<string, number>;
}

export interface PodStartSizes {
  pods: number[];
  rounds: number;
  probers: number;
  probesEach: number;
}

type Record4 = (what: string, crishim: string, raw: string, ratio: string) => void;

const PROBE_EVERY_MS = 2000;
/**
 * A kubelet's default is 1 s; under a burst of 110 a bare Docker exec takes longer than that, and
 * a probe cut at 1 s fails again and again while its exec runs on: the floor would measure its own
 * pile-up. 10 s on both sides measures what an exec takes.
 */
const PROBE_TIMEOUT_MS = 10_000;
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const ms = (n: number): string => (Number.isFinite(n) ? `${n.toFixed(0)} ms` : '-');
/** Like Promise.all, but every pod's work has ended before a failure goes up: what it made is then all known to the cleanup. */
async function allPods<T>(n: number, fn: () => Promise<T>): Promise<T[]> {
  const settled = await Promise.allSettled(Array.from({ length: n }, fn));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}
const ratio = (a: number, b: number): string => (Number.isFinite(a / b) && b > 0 ? (a / b).toFixed(2) : '-');

/** One burst's figures: per-pod ready times from the burst's start, the time of each step. */
interface Burst {
  readyMs: number[];
  allReadyMs: number;
  steps: Map<string, number[]>;
  cpuS: number;
  dockerCallsPerPod: number;
  /** Docker requests per pod by kind, start-up only (crishim's, counted by the bench's relay). */
  dockerCallKinds: Map<string, number>;
  teardownMs: number;
}

function stepTimer(): { steps: Map<string, number[]>; time<T>(what: string, fn: () => Promise<T>): Promise<T> } {
  const steps = new Map<string, number[]>();
  return {
    steps,
    async time<T>(what: string, fn: () => Promise<T>): Promise<T> {
      const t0 = now();
      const r = await fn();
      const list = steps.get(what) ?? [];
      list.push(now() - t0);
      steps.set(what, list);
      return r;
    },
  };
}

/**
 * Probes until one answers 0, every 2 s, as a readiness probe with periodSeconds 2: a probe that
 * errs or outlasts PROBE_TIMEOUT_MS is a failed one, as for a kubelet.
 */
async function probeUntilReady(probe: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; ; tries++) {
    const timedOut = sleep(PROBE_TIMEOUT_MS, false);
    if (await Promise.race([probe().catch(() => false), timedOut])) return;
    if (tries > 30) throw new Error(`no readiness probe succeeded in ${tries} tries`);
    await sleep(PROBE_EVERY_MS);
  }
}

let seq = 0;
const logs = new PodLogDirs();

function podConfig(): { metadata: { name: string; namespace: string; uid: string; attempt: number } } & Record<
  string,
  unknown
> {
  seq++;
  const metadata = {
    name: `start-${seq}`,
    namespace: 'crishim-bench-start',
    uid: `start-${process.pid}-${seq}`,
    attempt: 0,
  };
  return { metadata, labels: { 'crishim-bench': 'pod-start' }, log_directory: logs.make(metadata, 'app'), linux: {} };
}

/** A kubelet's start of N pods at once through a CRI endpoint, then their teardown. */
async function criBurst(
  t: PodStartTarget,
  image: string,
  n: number,
  made: { ids: string[]; containers: string[] },
): Promise<Burst> {
  const { steps, time } = stepTimer();
  const cpu0 = t.pid ? processCpuMs(t.pid) : 0;
  const calls0 = t.dockerRequests?.() ?? 0;
  const kinds0 = t.dockerRequestKinds?.() ?? new Map<string, number>();
  const { ids, containers } = made;
  const t0 = now();
  const readyMs = await allPods(n, async () => {
    const config = podConfig();
    const { pod_sandbox_id: id } = await time('RunPodSandbox', () =>
      t.call<{ pod_sandbox_id: string }>('RunPodSandbox', { config }),
    );
    ids.push(id);
    logs.own(id, config.log_directory as string);
    await time('PodSandboxStatus', () => t.call('PodSandboxStatus', { pod_sandbox_id: id }));
    const { container_id: c } = await time('CreateContainer', () =>
      t.call<{ container_id: string }>('CreateContainer', {
        pod_sandbox_id: id,
        config: {
          metadata: { name: 'app', attempt: 0 },
          image: { image },
          command: ['sleep', '3600'],
          log_path: 'app/0.log',
        },
        sandbox_config: config,
      }),
    );
    containers.push(c);
    await time('StartContainer', () => t.call('StartContainer', { container_id: c }));
    await time('ready (probes)', () =>
      probeUntilReady(async () => {
        const r = await t.call<{ exit_code: number }>('ExecSync', {
          container_id: c,
          cmd: ['true'],
          timeout: String(PROBE_TIMEOUT_MS / 1000),
        });
        return r.exit_code === 0;
      }),
    );
    return now() - t0;
  });
  const allReadyMs = now() - t0;
  const cpuS = t.pid ? (processCpuMs(t.pid) - cpu0) / 1000 : NaN;
  const dockerCallsPerPod = t.dockerRequests ? (t.dockerRequests() - calls0) / n : NaN;
  const dockerCallKinds = new Map<string, number>();
  for (const [k, v] of t.dockerRequestKinds?.() ?? []) {
    const d = v - (kinds0.get(k) ?? 0);
    if (d > 0) dockerCallKinds.set(k, d / n);
  }
  return { readyMs, allReadyMs, steps, cpuS, dockerCallsPerPod, dockerCallKinds, teardownMs: NaN };
}

async function criTeardown(t: PodStartTarget, ids: string[]): Promise<number> {
  const t0 = now();
  await Promise.all(
    ids.map(async (id) => {
      await t.call('StopPodSandbox', { pod_sandbox_id: id });
      await t.call('RemovePodSandbox', { pod_sandbox_id: id });
      logs.remove(id);
    }),
  );
  return now() - t0;
}

interface FloorPod {
  pause: string;
  app: string;
  pid: number;
  /** Torn down already: its pause pid may belong to another process by now. */
  gone?: boolean;
}

/** The same pods made with Docker's and the CNI plugins' own calls, nothing in between. */
async function floorBurst(
  docker: Docker,
  conf: ConfList,
  pause: string,
  image: string,
  n: number,
  made: FloorPod[],
): Promise<Burst> {
  const { steps, time } = stepTimer();
  const t0 = now();
  const readyMs = await allPods(n, async () => {
    const p = await time('pause create+start+inspect', async () => {
      const c = await docker.createContainer({
        Image: pause,
        Labels: { 'crishim-bench': 'pod-start-floor' },
        HostConfig: { NetworkMode: 'none', IpcMode: 'shareable' },
      });
      const pod: FloorPod = { pause: c.id, app: '', pid: 0 };
      made.push(pod);
      await c.start();
      pod.pid = (await c.inspect()).State.Pid;
      return pod;
    });
    await time('CNI ADD chain', () => cniAdd(conf, p.pause, p.pid));
    await time('app create+start', async () => {
      const c = await docker.createContainer({
        Image: image,
        Cmd: ['sleep', '3600'],
        Labels: { 'crishim-bench': 'pod-start-floor' },
        HostConfig: { NetworkMode: `container:${p.pause}`, IpcMode: `container:${p.pause}` },
      });
      p.app = c.id;
      await c.start();
    });
    await time('ready (probes)', () => probeUntilReady(() => dockerExec(docker, p.app).then((code) => code === 0)));
    return now() - t0;
  });
  return {
    readyMs,
    allReadyMs: now() - t0,
    steps,
    cpuS: NaN,
    dockerCallsPerPod: NaN,
    dockerCallKinds: new Map(),
    teardownMs: NaN,
  };
}

/** One exec as a runtime makes it: create, start (reading the output to its end), inspect for the exit code. */
async function dockerExec(docker: Docker, container: string): Promise<number> {
  const exec = await docker.getContainer(container).exec({ Cmd: ['true'], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  await new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
    stream.resume();
  });
  for (let delay = 10; ; delay = Math.min(delay * 2, 250)) {
    const info = await exec.inspect();
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    await sleep(delay);
  }
}

async function floorTeardown(docker: Docker, conf: ConfList, pods: FloorPod[]): Promise<number> {
  const t0 = now();
  await Promise.all(
    pods.map(async (p) => {
      await Promise.all([
        p.app ? stopQuietly(docker, p.app, 0) : undefined,
        p.pause ? cniDel(conf, p.pause, p.pid) : undefined,
      ]);
      await stopQuietly(docker, p.pause, 10);
      await Promise.all([p.pause, p.app].filter(Boolean).map((id) => docker.getContainer(id).remove({ force: true })));
      p.gone = true;
    }),
  );
  return now() - t0;
}

/** Removes whatever a failed floor burst left, without timing it. */
async function floorCleanup(docker: Docker, conf: ConfList, pods: FloorPod[]): Promise<void> {
  // no netns for the DEL: a pause process that is gone may have left its pid to another
  const left = pods.filter((p) => !p.gone).map((p) => ({ ...p, pid: 0 }));
  await floorTeardown(docker, conf, left).catch(() => undefined);
  const containers = await docker.listContainers({
    all: true,
    filters: { label: ['crishim-bench=pod-start-floor'] },
  });
  await Promise.all(
    containers.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
}

/** ExecSync latency with `probers` clients probing at once, each `each` times in a row. */
async function concurrentProbes(
  probers: number,
  each: number,
  probe: (i: number) => Promise<unknown>,
): Promise<number[]> {
  const lat: number[] = [];
  await Promise.all(
    Array.from({ length: probers }, async (_, i) => {
      for (let k = 0; k < each; k++) {
        const t0 = now();
        await probe(i);
        lat.push(now() - t0);
      }
    }),
  );
  return lat;
}

/**
 * The round whose burst was all Ready soonest. Every figure of a side comes from that one round, as
 * in kubelet-burst: a best taken per figure would pair one round's p50 with another's all Ready.
 */
const bestRound = (bursts: Burst[]): Burst | undefined => [...bursts].sort((a, b) => a.allReadyMs - b.allReadyMs)[0];
const ofBest = (bursts: Burst[], key: (b: Burst) => number): number => {
  const b = bestRound(bursts);
  return b ? key(b) : NaN;
};
const bestPct = (bursts: Burst[], p: number): number => ofBest(bursts, (b) => pct(b.readyMs, p));

function stepRows(label: string, bursts: Burst[]): string[][] {
  const b = bestRound(bursts);
  return b ? [...b.steps].map(([s, times]) => [label, s, ms(pct(times, 50))]) : [];
}

export interface PodStartOptions {
  crishim: PodStartTarget;
  /** Other CRI runtimes driven by the same client (`--compare`); they must have `image` in their store. */
  others: PodStartTarget[];
  docker: Docker;
  cniConfFile: string;
  pauseImage: string;
  image: string;
  sizes: PodStartSizes;
  record: Record4;
  addTable(t: string): void;
}

export async function podStart(o: PodStartOptions): Promise<void> {
  const conf = readConfList(o.cniConfFile);
  const runtimes = [o.crishim, ...o.others];
  try {
    for (const n of o.sizes.pods) {
      const viaCri = new Map<string, Burst[]>(runtimes.map((r) => [r.name, []]));
      const floor: Burst[] = [];
      let execCri: number[] = [];
      let execRaw: number[] = [];
      for (let round = 0; round < o.sizes.rounds; round++) {
        // alternate who goes first, so neither always meets a warmer (or busier) engine
        const order = round % 2 === 0 ? ['cri', 'floor'] : ['floor', 'cri'];
        for (const side of order) {
          if (side === 'floor') {
            const made: FloorPod[] = [];
            try {
              const b = await floorBurst(o.docker, conf, o.pauseImage, o.image, n, made);
              b.teardownMs = await floorTeardown(o.docker, conf, made);
              floor.push(b);
            } finally {
              await floorCleanup(o.docker, conf, made);
            }
            continue;
          }
          for (const r of runtimes) {
            const made = { ids: [] as string[], containers: [] as string[] };
            let b: Burst | undefined;
            try {
              b = await criBurst(r, o.image, n, made);
              // the probe cost, on the burst's own containers, crishim's ExecSync against a bare exec
              if (r === o.crishim && round === 0) {
                const k = Math.min(o.sizes.probers, made.containers.length);
                const cs = made.containers;
                execCri = await concurrentProbes(k, o.sizes.probesEach, (i) =>
                  r.call('ExecSync', { container_id: cs[i], cmd: ['true'], timeout: '30' }),
                );
                execRaw = await concurrentProbes(k, o.sizes.probesEach, (i) => dockerExec(o.docker, cs[i]));
              }
            } finally {
              const teardownMs = await criTeardown(r, made.ids);
              if (b) b.teardownMs = teardownMs;
            }
            viaCri.get(r.name)?.push(b);
          }
        }
      }
      const mine = viaCri.get(o.crishim.name) ?? [];
      const cmp = (what: string, key: (b: Burst[]) => number): void =>
        o.record(`pod-start ${n} pods: ${what}`, ms(key(mine)), ms(key(floor)), ratio(key(mine), key(floor)));
      cmp('all Ready (best round)', (b) => ofBest(b, (x) => x.allReadyMs));
      cmp('p50 per pod', (b) => bestPct(b, 50));
      cmp('p90 per pod', (b) => bestPct(b, 90));
      cmp('p99 per pod', (b) => bestPct(b, 99));
      cmp('teardown of the burst', (b) => ofBest(b, (x) => x.teardownMs));
      o.record(
        `pod-start ${n} pods: crishim CPU s, Docker calls per pod`,
        `${ofBest(mine, (x) => x.cpuS).toFixed(2)} s, ${ofBest(mine, (x) => x.dockerCallsPerPod).toFixed(1)}`,
        '-',
        '-',
      );
      if (execCri.length)
        o.record(
          `ExecSync p50 / p90 under ${Math.min(o.sizes.probers, n)} concurrent probers vs bare docker exec`,
          `${ms(pct(execCri, 50))} / ${ms(pct(execCri, 90))}`,
          `${ms(pct(execRaw, 50))} / ${ms(pct(execRaw, 90))}`,
          ratio(pct(execCri, 50), pct(execRaw, 50)),
        );
      o.addTable(
        table(
          [`${n} pods at once`, 'step (p50 of the best round)', 'time'],
          [...stepRows('crishim', mine), ...stepRows('floor', floor)],
        ),
      );
      const kinds = mine[0]?.dockerCallKinds ?? new Map<string, number>();
      if (kinds.size)
        o.addTable(
          table(
            [`crishim's Docker requests per pod, ${n} pods`, 'count'],
            [...kinds].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, v.toFixed(2)]),
          ),
        );
      if (o.others.length)
        o.addTable(
          table(
            [`${n} pods at once`, 'all Ready', 'p50', 'p90', 'teardown', 'CPU s'],
            [...runtimes.map((r) => [r.name, viaCri.get(r.name) ?? []] as const), ['floor', floor] as const].map(
              ([name, b]) => [
                name,
                ms(ofBest(b, (x) => x.allReadyMs)),
                ms(bestPct(b, 50)),
                ms(bestPct(b, 90)),
                ms(ofBest(b, (x) => x.teardownMs)),
                Number.isFinite(ofBest(b, (x) => x.cpuS)) ? ofBest(b, (x) => x.cpuS).toFixed(2) : '-',
              ],
            ),
          ),
        );
    }
  } finally {
    logs.removeAll();
  }
}
