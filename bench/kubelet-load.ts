/**
 * The `kubelet load` section: what a kubelet asks of its runtime all day, at a
 * given number of pods (110 is the kubelet's default max-pods):
 *   PLEG relist            ListPodSandbox + ListContainers, every second, through a client shaped
 *                          like the kubelet's (bench/kubelet-client.ts) and, every other second,
 *                          through grpc-js's (decoding every field), whose own cost it shows
 *   runtime health         Status, every 5 s
 *   pod status sync        PodSandboxStatus + ListContainers(pod) + ContainerStatus, each pod once a minute, spread out
 *   stats                  ListContainerStats + ListPodSandboxStats + ImageFsInfo at once, every 10 s,
 *                          through the same two clients in turn
 *   log monitor            ListContainers + ContainerStatus of each running container, one after
 *                          the other, every 10 s: the kubelet's container log manager looking for
 *                          logs to rotate (containerLogMonitorInterval, one worker by default)
 *   version                Version, every second (a 1.32 kubelet's rate, measured)
 * The same-run baseline does the relist, health check, status sync, log monitor and version with the
 * raw Docker calls a runtime without a view of its own would make (`docker ps`
 * twice a second, an inspect per status), so dockerd's share is comparable.
 */
import Docker from 'dockerode';
import {
  type CallCpu,
  dockerdPid,
  mean,
  processCpuMs,
  pct,
  quarterMeans,
  resident,
  residentCell,
  rssMiB,
  rssSpread,
  spacedCallCpu,
  waitQuiet,
  type Resident,
} from './measure';
import type { ReplayFloor } from './replay-floor';
import { dockerRelist, relistInTurn, type StatsRoundCall } from './kubelet-client';

export interface LoadTarget {
  /** crishim's pid, for its CPU and RSS. */
  pid: number;
  call<T>(method: string, req: unknown): Promise<T>;
  /** The PLEG relist through a client shaped like the kubelet's (bench/kubelet-client.ts). */
  relist(): Promise<unknown>;
  /** The stats round through the same client: `calls`, or all three. */
  statsRound(calls?: readonly StatsRoundCall[]): Promise<unknown>;
  imageFsInfo(): Promise<unknown>;
  /** Starts a networked pod with one long-running container; answers the sandbox id. */
  runPod(): Promise<string>;
  removePod(id: string): Promise<void>;
  /** Docker API requests crishim made so far. */
  dockerRequests(): number;
  /** A server replaying crishim's answers about this pod and the node (bench/replay-floor.ts), for the floor. */
  replayFloor?(podId: string): Promise<ReplayFloor>;
}

export interface LoadSizes {
  pods: number;
  /** How long crishim (and each compared runtime) is loaded. */
  seconds: number;
  /** How long the raw-Docker baseline and the replaying floor run, when not `seconds`: their rates do not need a soak. */
  baselineSeconds?: number;
  statsEveryMs: number;
  /** How long it takes to sync every pod once (a minute in the kubelet). */
  podSyncCycleMs: number;
  /** How often the log monitor asks for every running container's status (10 s in the kubelet). */
  logMonitorEveryMs: number;
}

type Record4 = (what: string, crishim: string, raw: string, ratio: string) => void;

/** The sizes for a baseline phase: `baselineSeconds` long. */
const baselineOf = (sizes: LoadSizes): LoadSizes => ({ ...sizes, seconds: sizes.baselineSeconds ?? sizes.seconds });

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const now = (): number => Number(process.hrtime.bigint()) / 1e6;

const ms = (n: number): string => `${n.toFixed(1)} ms`;

export interface Calls {
  relist(): Promise<unknown>;
  /** The same relist through grpc-js's client, made instead of `relist` every other second. */
  relistGrpcJs?(): Promise<unknown>;
  status(): Promise<unknown>;
  podSync(podId: string): Promise<unknown>;
  /** The container log manager's round: every running container's status, one at a time. */
  logMonitor(): Promise<unknown>;
  version(): Promise<unknown>;
  statsRound?(): Promise<unknown>;
  /** The same stats round through grpc-js's client, made instead of `statsRound` every other time. */
  statsRoundGrpcJs?(): Promise<unknown>;
}

export interface PhaseResult {
  relist: number[];
  /** Latencies of `relistGrpcJs`, when the calls have one. */
  relistGrpcJs: number[];
  stats: number[];
  /** Latencies of `statsRoundGrpcJs`, when the calls have one. */
  statsGrpcJs: number[];
  cpuPct: number;
  dockerdPct: number;
  errors: number;
  firstError: string;
  /** The runtime's RSS once a second during the load (MiB): V8 lets garbage build up to a limit, so one reading after the load may fall anywhere in that sawtooth. */
  rss: number[];
}

/**
 * Runs the kubelet's loops for `seconds` and measures both processes' CPU over exactly that time.
 * Each loop runs once over every pod first, unmeasured: a kubelet up for longer than its sync
 * period has synced every pod already, and a runtime's first answer about a pod (crishim reads
 * its checkpoint and CNI result once, then keeps them) is a start-up cost, not the steady load.
 */
export async function drive(
  calls: Calls,
  pods: string[],
  sizes: LoadSizes,
  pid: number | undefined,
  dockerd: number,
): Promise<PhaseResult> {
  const out: PhaseResult = {
    relist: [],
    relistGrpcJs: [],
    stats: [],
    statsGrpcJs: [],
    cpuPct: 0,
    dockerdPct: 0,
    errors: 0,
    firstError: '',
    rss: [],
  };
  const failed = (err: unknown): void => {
    out.errors++;
    out.firstError ||= (err as Error).message;
  };
  await Promise.all([
    calls.relist(),
    calls.relistGrpcJs?.(),
    calls.status(),
    calls.version(),
    calls.statsRound?.(),
    calls.statsRoundGrpcJs?.(),
    calls.logMonitor(),
  ]).catch(failed);
  await mapLimit(pods.length, 4, (i) => calls.podSync(pods[i]).catch(failed));
  const t0 = now();
  const end = t0 + sizes.seconds * 1000;
  const cpu0 = pid ? processCpuMs(pid) : 0;
  const d0 = processCpuMs(dockerd);
  // each loop keeps its own phase, as the kubelet's do: started together, the health check would
  // meet every fifth relist and the stats round every tenth, each time, which no kubelet does
  const every = async (periodMs: number, fn: () => Promise<void>, phaseMs = 0): Promise<void> => {
    for (let next = now() + phaseMs; next < end; next += periodMs) {
      if (next > now()) await sleep(next - now());
      if (now() >= end) break;
      await fn().catch(failed);
    }
  };
  const timedInto = (into: number[], fn: () => Promise<unknown>) => async (): Promise<void> => {
    const s = now();
    await fn();
    into.push(now() - s);
  };
  /** `first`, and every other time `second` instead when there is one: two clients at one rate. */
  const inTurn = (first: () => Promise<void>, second?: () => Promise<void>): (() => Promise<void>) => {
    let n = 0;
    return () => (second && n++ % 2 === 1 ? second() : first());
  };
  let podIndex = 0;
  const relistGrpcJs = calls.relistGrpcJs && timedInto(out.relistGrpcJs, calls.relistGrpcJs);
  const relistLean = timedInto(out.relist, calls.relist);
  const statsGrpcJs = calls.statsRoundGrpcJs && timedInto(out.statsGrpcJs, calls.statsRoundGrpcJs);
  const statsLean = calls.statsRound && timedInto(out.stats, calls.statsRound);
  await Promise.all([
    // one relist a second, as the kubelet's; the two clients take turns
    every(1000, inTurn(relistLean, relistGrpcJs)),
    every(5000, async () => void (await calls.status()), 400),
    every(
      sizes.podSyncCycleMs / Math.max(1, pods.length),
      async () => void (await calls.podSync(pods[podIndex++ % pods.length])),
      200,
    ),
    // the stats round likewise, the kubelet-shaped client first
    statsLean ? every(sizes.statsEveryMs, inTurn(statsLean, statsGrpcJs), 600) : Promise.resolve(),
    every(sizes.logMonitorEveryMs, async () => void (await calls.logMonitor()), 300),
    every(1000, async () => void (await calls.version()), 700),
    pid ? every(1000, async () => void out.rss.push(rssMiB(pid)), 800) : Promise.resolve(),
  ]);
  const wall = now() - t0;
  if (pid) out.cpuPct = ((processCpuMs(pid) - cpu0) / wall) * 100;
  out.dockerdPct = ((processCpuMs(dockerd) - d0) / wall) * 100;
  return out;
}

/** The kubelet's loops against a replaying server (same pods, same client): the floor under crishim's figures. */
async function replayPhase(
  start: (podId: string) => Promise<ReplayFloor>,
  pods: string[],
  sizes: LoadSizes,
  dockerd: number,
): Promise<PhaseResult & Resident> {
  const floor = await start(pods[0]);
  try {
    const figures = await drive(criCalls(floor), pods, baselineOf(sizes), floor.pid, dockerd);
    return { ...figures, ...resident(floor.pid) };
  } finally {
    await floor.close();
  }
}

export async function mapLimit<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

/** The kubelet's calls through a CRI endpoint: one shape for crishim and for any runtime compared with it. */
export function criCalls(t: Pick<LoadTarget, 'call' | 'imageFsInfo' | 'relist' | 'statsRound'>): Required<Calls> {
  return {
    relist: () => t.relist(),
    relistGrpcJs: () => relistInTurn((method) => t.call(method, {})),
    status: () => t.call('Status', {}),
    podSync: async (id) => {
      await t.call('PodSandboxStatus', { pod_sandbox_id: id });
      const { containers } = await t.call<{ containers: Array<{ id: string }> }>('ListContainers', {
        filter: { pod_sandbox_id: id },
      });
      await Promise.all(containers.map((c) => t.call('ContainerStatus', { container_id: c.id })));
    },
    logMonitor: async () => {
      const { containers } = await t.call<{ containers: Array<{ id: string; state: string | number }> }>(
        'ListContainers',
        {},
      );
      for (const c of containers)
        if (c.state === 'CONTAINER_RUNNING' || c.state === 1) await t.call('ContainerStatus', { container_id: c.id });
    },
    version: () => t.call('Version', {}),
    statsRound: () => t.statsRound(),
    statsRoundGrpcJs: () =>
      Promise.all([t.call('ListContainerStats', {}), t.call('ListPodSandboxStats', {}), t.imageFsInfo()]),
  };
}

/** crishim's figures under the load and the raw-Docker baseline's, for a comparison with other runtimes. */
export interface LoadFigures {
  crishim: PhaseResult & Resident;
  raw: PhaseResult;
  /** The same loops against a server that replays crishim's answers and does nothing else. */
  floor?: PhaseResult & Resident;
}

export async function kubeletLoad(
  t: LoadTarget,
  docker: Docker,
  sizes: LoadSizes,
  record: Record4,
): Promise<LoadFigures> {
  const dockerd = dockerdPid();
  const pods: string[] = [];
  try {
    await mapLimit(sizes.pods, 8, async () => pods.push(await t.runPod()));
    // let start-up work (first stats walks, CNI) finish before measuring
    await sleep(2000);

    const raw = await drive(
      {
        relist: () => dockerRelist(docker),
        status: () => docker.ping(),
        podSync: async (id) => {
          await docker.getContainer(id).inspect();
          const members = await docker.listContainers({
            all: true,
            filters: { label: [`io.kubernetes.sandbox.id=${id}`] },
          });
          await Promise.all(members.map((m) => docker.getContainer(m.Id).inspect()));
        },
        version: () => docker.version(),
        logMonitor: async () => {
          const running = await docker.listContainers({
            filters: { status: ['running'], label: ['io.kubernetes.docker.type=container'] },
          });
          for (const c of running) await docker.getContainer(c.Id).inspect();
        },
      },
      pods,
      baselineOf(sizes),
      undefined,
      dockerd,
    );

    const requests0 = t.dockerRequests();
    const cri = await drive(criCalls(t), pods, sizes, t.pid, dockerd);
    const requests = t.dockerRequests() - requests0;

    // one stats call's CPU, alone: the loop above overlaps calls; apart by more than the
    // collector's sample reuse window, so each call reads everything
    const cost = (method: string): Promise<CallCpu> => spacedCallCpu(t.pid, () => t.call(method, {}), 5, 600);
    // timed once the daemon is quiet: V8 is still busy with the load's garbage and compiles for a while
    await waitQuiet(t.pid);
    const ctrStatsCpu = await cost('ListContainerStats');
    const podStatsCpu = await cost('ListPodSandboxStats');
    const mem = resident(t.pid);

    const base = baselineOf(sizes).seconds;
    const tag = `kubelet load, ${sizes.pods} pods, ${sizes.seconds} s${base !== sizes.seconds ? ` (baselines ${base} s)` : ''}`;
    record(
      `${tag}: runtime CPU % (+ dockerd CPU %)`,
      `${cri.cpuPct.toFixed(2)} % (+ ${cri.dockerdPct.toFixed(2)} %)`,
      `- (+ ${raw.dockerdPct.toFixed(2)} %)`,
      `${((cri.cpuPct + cri.dockerdPct) / raw.dockerdPct).toFixed(2)} (sum vs dockerd alone)`,
    );
    record(
      `${tag}: relist p50 / p99 (kubelet-shaped client)`,
      `${ms(pct(cri.relist, 50))} / ${ms(pct(cri.relist, 99))}`,
      `${ms(pct(raw.relist, 50))} / ${ms(pct(raw.relist, 99))}`,
      (pct(cri.relist, 50) / pct(raw.relist, 50)).toFixed(2),
    );
    record(
      `${tag}: relist p50 / p99 through grpc-js's client (every field decoded)`,
      `${ms(pct(cri.relistGrpcJs, 50))} / ${ms(pct(cri.relistGrpcJs, 99))}`,
      '-',
      '-',
    );
    record(
      `${tag}: stats round p50 / p99 (3 calls, kubelet-shaped client)`,
      `${ms(pct(cri.stats, 50))} / ${ms(pct(cri.stats, 99))}`,
      '-',
      '-',
    );
    record(
      `${tag}: stats round p50 / p99 through grpc-js's client (every field decoded)`,
      `${ms(pct(cri.statsGrpcJs, 50))} / ${ms(pct(cri.statsGrpcJs, 99))}`,
      '-',
      '-',
    );
    record(
      `${tag}: CPU per ListContainerStats / ListPodSandboxStats, p50 of 5 (main thread)`,
      `${ms(pct(ctrStatsCpu.all, 50))} / ${ms(pct(podStatsCpu.all, 50))} (${ms(pct(ctrStatsCpu.main, 50))} / ${ms(pct(podStatsCpu.main, 50))})`,
      '-',
      '-',
    );
    record(`${tag}: runtime RSS (anonymous part) after the load`, residentCell(mem), '-', '-');
    const quarters = quarterMeans(cri.rss).map((m) => m.toFixed(1));
    record(
      `${tag}: runtime RSS during the load, mean / max (quarters' means)`,
      `${rssSpread(cri.rss)}${quarters.length ? ` (${quarters.join(', ')})` : ''}`,
      '-',
      '-',
    );
    // the relists and status calls make none; what is left is the health ping, the view's safety-net resync, image fs usage
    record(
      `${tag}: docker calls by crishim during the load (${cri.relist.length + cri.relistGrpcJs.length} relists)`,
      String(requests),
      '-',
      `${cri.errors + raw.errors} errors${cri.firstError || raw.firstError ? ` (${(cri.firstError || raw.firstError).slice(0, 80)})` : ''}`,
    );
    const floor = t.replayFloor && (await replayPhase(t.replayFloor, pods, sizes, dockerd));
    if (floor) {
      const vs = (what: string, mine: number[], its: number[]): void =>
        record(
          `${tag}: ${what} p50 / p99, crishim vs grpc-js replaying its answers (a Node server's floor)`,
          `${ms(pct(mine, 50))} / ${ms(pct(mine, 99))}`,
          `${ms(pct(its, 50))} / ${ms(pct(its, 99))}`,
          (pct(mine, 50) / pct(its, 50)).toFixed(2),
        );
      vs('relist', cri.relist, floor.relist);
      vs("relist through grpc-js's client", cri.relistGrpcJs, floor.relistGrpcJs);
      vs('stats round', cri.stats, floor.stats);
      vs("stats round through grpc-js's client", cri.statsGrpcJs, floor.statsGrpcJs);
      record(
        `${tag}: runtime RSS during the load, mean / max, crishim vs grpc-js replaying its answers`,
        rssSpread(cri.rss),
        rssSpread(floor.rss),
        (mean(cri.rss) / mean(floor.rss)).toFixed(2),
      );
      record(
        `${tag}: runtime CPU %, crishim vs grpc-js replaying its answers`,
        `${cri.cpuPct.toFixed(2)} %`,
        `${floor.cpuPct.toFixed(2)} %`,
        (cri.cpuPct / floor.cpuPct).toFixed(2),
      );
    }
    return { crishim: { ...cri, ...mem }, raw, floor };
  } finally {
    await mapLimit(pods.length, 8, (i) => t.removePod(pods[i]).catch(() => undefined));
  }
}
