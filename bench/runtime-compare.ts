/**
 * crishim beside other CRI runtimes in the same run (`npm run bench -- --compare=...`):
 * the kubelet load and the pod lifecycle, with the same pods, the same call shape and
 * the same clock for each. The runtimes take turns (the previous one's pods are removed
 * first), so each is measured with only its own pods on the shared dockerd.
 */
import { setTimeout as sleep } from 'timers/promises';
import {
  criCalls,
  drive,
  mapLimit,
  type LoadFigures,
  type LoadSizes,
  type LoadTarget,
  type PhaseResult,
} from './kubelet-load';
import { STATS_ROUND } from './kubelet-client';
import { dockerdPid, mean, pct, processCpuMs, resident, residentCell, rssSpread, type Resident } from './measure';

export interface CompareTarget extends Omit<LoadTarget, 'dockerRequests'> {
  name: string;
  /** The runtime drives the shared dockerd, so dockerd's CPU is part of its cost. */
  usesDocker: boolean;
}

type Figures = PhaseResult & Resident & { skipped?: string[] };

const STATS_CALLS = ['ListContainerStats', 'ListPodSandboxStats'];

const ms = (n: number): string => (Number.isFinite(n) ? `${n.toFixed(1)} ms` : '-');
const pcts = (n: number): string => `${n.toFixed(2)} %`;
const ratio = (a: number, b: number): string => (Number.isFinite(a / b) ? (a / b).toFixed(2) : '-');

/** A markdown table, columns padded to their widest cell. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => `| ${widths.map((w, i) => (r[i] ?? '').padEnd(w)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** The kubelet load against one more runtime: its own pods, crishim's call shape, then its pods removed. */
async function loadOn(t: CompareTarget, sizes: LoadSizes): Promise<Figures> {
  const pods: string[] = [];
  try {
    await mapLimit(sizes.pods, 8, async () => pods.push(await t.runPod()));
    // as for crishim: let start-up work settle before measuring
    await sleep(2000);
    // a stats call the runtime cannot answer (cri-dockerd 0.3 has no ListPodSandboxStats; containerd 1.6
    // fails it for pods without a cgroup parent) leaves the round, and the table says so
    const skipped: string[] = [];
    for (const method of STATS_CALLS) {
      await t
        .call(method, {})
        .catch((err: unknown) => skipped.push(`${method}: ${(err as Error).message.slice(0, 40)}`));
    }
    const skip = new Set(skipped.map((s) => s.slice(0, s.indexOf(':'))));
    const call = <T>(method: string, req: unknown): Promise<T> =>
      skip.has(method) ? Promise.resolve({} as T) : t.call<T>(method, req);
    const figures = await drive(
      criCalls({
        call,
        imageFsInfo: () => t.imageFsInfo(),
        relist: () => t.relist(),
        statsRound: () => t.statsRound(STATS_ROUND.filter((m) => !skip.has(m))),
      }),
      pods,
      sizes,
      t.pid,
      dockerdPid(),
    );
    return { ...figures, ...resident(t.pid), skipped };
  } catch (err) {
    throw new Error(`kubelet load on ${t.name}: ${(err as Error).message}`, { cause: err });
  } finally {
    await mapLimit(pods.length, 8, (i) => t.removePod(pods[i]).catch(() => undefined));
  }
}

/**
 * Runs the kubelet load on every target after crishim's run (`base`) and tables them:
 * one row per runtime, then crishim's ratio to each.
 */
export async function compareKubeletLoad(
  base: LoadFigures,
  targets: CompareTarget[],
  sizes: LoadSizes,
): Promise<string> {
  const rows: string[][] = [];
  const sum = (f: Figures, usesDocker: boolean): number => f.cpuPct + (usesDocker ? f.dockerdPct : 0);
  const row = (name: string, f: Figures, usesDocker: boolean): string[] => [
    name,
    pcts(f.cpuPct),
    // for a runtime without Docker, dockerd's CPU meanwhile is only the machine's background
    usesDocker ? pcts(f.dockerdPct) : `- (bg ${pcts(f.dockerdPct)})`,
    pcts(sum(f, usesDocker)),
    residentCell(f),
    rssSpread(f.rss),
    `${ms(pct(f.relist, 50))} / ${ms(pct(f.relist, 99))}`,
    `${ms(pct(f.stats, 50))} / ${ms(pct(f.stats, 99))}`,
    f.errors ? `${f.errors} (${f.firstError.slice(0, 60)})` : '0',
  ];
  rows.push([
    'raw Docker lists (baseline)',
    '-',
    pcts(base.raw.dockerdPct),
    pcts(base.raw.dockerdPct),
    '-',
    '-',
    `${ms(pct(base.raw.relist, 50))} / ${ms(pct(base.raw.relist, 99))}`,
    '-',
    String(base.raw.errors),
  ]);
  rows.push(row('crishim', base.crishim, true));
  // the floor for a Node runtime: same client and transport, a grpc-js server that only replays answers
  if (base.floor) rows.push(row('grpc-js replaying crishim (floor)', base.floor, false));
  const others: Array<[CompareTarget, Figures]> = [];
  for (const t of targets) {
    const f = await loadOn(t, sizes);
    others.push([t, f]);
    rows.push(row(t.name, f, t.usesDocker));
  }
  const notes = others.flatMap(([t, f]) => (f.skipped ?? []).map((s) => `${t.name} stats round without ${s}`));
  const c = base.crishim;
  for (const [t, f] of others) {
    rows.push([
      `crishim / ${t.name}`,
      ratio(c.cpuPct, f.cpuPct),
      t.usesDocker ? ratio(c.dockerdPct, f.dockerdPct) : '-',
      ratio(sum(c, true), sum(f, t.usesDocker)),
      ratio(c.rssMiB, f.rssMiB),
      ratio(mean(c.rss), mean(f.rss)),
      ratio(pct(c.relist, 50), pct(f.relist, 50)),
      ratio(pct(c.stats, 50), pct(f.stats, 50)) + (f.skipped?.length ? ` (3 calls vs ${3 - f.skipped.length})` : ''),
      '',
    ]);
  }
  const title = `kubelet load, ${sizes.pods} pods, ${sizes.seconds} s each, runtimes in turn (CPU in % of one core)`;
  return `${title}\n${notes.map((n) => `  ${n}\n`).join('')}${table(['runtime', 'runtime CPU', 'dockerd CPU', 'runtime + dockerd', 'runtime RSS (anon)', 'RSS during, mean / max', 'relist p50 / p99', 'stats round p50 / p99', 'errors'], rows)}`;
}

/**
 * What the lifecycle section needs of a runtime: its name and its CRI calls; with its pid, also
 * the CPU it spent per pod (and dockerd's, when it drives the shared dockerd).
 */
export type LifecycleTarget = Pick<CompareTarget, 'name' | 'call'> & Partial<Pick<CompareTarget, 'pid' | 'usesDocker'>>;

export interface LifecycleShape {
  pods: number;
  /** Containers in each pod (the kubelet's pods often carry a sidecar or two). */
  containers: number;
  /** A fresh pod config (unique name and uid) for RunPodSandbox. */
  podConfig(): Record<string, unknown>;
  image: string;
  /**
   * Pods each runtime takes through the same lifecycle first, neither timed nor counted: a node's
   * runtime has run for days, so a pod's cost is a warm daemon's, not a first start's compiling.
   */
  warmUpPods?: number;
}

const LIFECYCLE_CALLS = [
  'RunPodSandbox',
  'CreateContainer',
  'StartContainer',
  'ListPodSandbox',
  'ListContainers',
  'PodSandboxStatus',
  'ContainerStatus',
  'StopContainer',
  'StopPodSandbox',
  'RemovePodSandbox',
] as const;
type LifecycleCall = (typeof LIFECYCLE_CALLS)[number];

/** One runtime's lifecycle: each call's latencies, and the CPU ms per pod of the whole run (NaN when not measured). */
interface LifecycleRun {
  lat: Map<LifecycleCall, number[]>;
  runtimeCpuPerPod: number;
  dockerdCpuPerPod: number;
}

/** CPU ms of the runtime and of dockerd so far (NaN for what a target does not measure). */
function lifecycleCpu(t: LifecycleTarget): { runtime: number; dockerd: number } {
  return {
    runtime: t.pid === undefined ? NaN : processCpuMs(t.pid),
    dockerd: t.pid === undefined || !t.usesDocker ? NaN : processCpuMs(dockerdPid()),
  };
}

/**
 * A kubelet's pod lifecycle, one call at a time so each latency is the call's own: start
 * `pods` networked pods of `containers` containers, the List and Status calls at that size,
 * then stop (containers, then sandbox) and remove each.
 */
async function lifecycleOn(t: LifecycleTarget, shape: LifecycleShape): Promise<LifecycleRun> {
  const cpu0 = lifecycleCpu(t);
  const lat = new Map<LifecycleCall, number[]>(LIFECYCLE_CALLS.map((c) => [c, []]));
  const timed = async <T>(call: LifecycleCall, req: unknown): Promise<T> => {
    const t0 = process.hrtime.bigint();
    try {
      return await t.call<T>(call, req);
    } catch (err) {
      throw new Error(`${call} on ${t.name}: ${(err as Error).message}`, { cause: err });
    } finally {
      lat.get(call)?.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  };
  const pods: Array<{ id: string; containers: string[] }> = [];
  try {
    for (let i = 0; i < shape.pods; i++) {
      const config = shape.podConfig();
      const { pod_sandbox_id: id } = await timed<{ pod_sandbox_id: string }>('RunPodSandbox', { config });
      const p = { id, containers: [] as string[] };
      pods.push(p);
      for (let k = 0; k < shape.containers; k++) {
        const { container_id: c } = await timed<{ container_id: string }>('CreateContainer', {
          pod_sandbox_id: id,
          // exits on SIGTERM, as a well-behaved app does: StopContainer measures the runtime, not a grace period
          config: {
            metadata: { name: k ? `app-${k}` : 'app', attempt: 0 },
            image: { image: shape.image },
            command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'],
          },
          sandbox_config: config,
        });
        p.containers.push(c);
        await timed('StartContainer', { container_id: c });
      }
    }
    for (let i = 0; i < 5; i++) {
      await timed('ListPodSandbox', {});
      await timed('ListContainers', {});
      await timed('PodSandboxStatus', { pod_sandbox_id: pods[i % pods.length].id });
      await timed('ContainerStatus', { container_id: pods[i % pods.length].containers[0] });
    }
    while (pods.length) {
      const p = pods[0];
      for (const c of p.containers) await timed('StopContainer', { container_id: c, timeout: 10 });
      await timed('StopPodSandbox', { pod_sandbox_id: p.id });
      await timed('RemovePodSandbox', { pod_sandbox_id: p.id });
      pods.shift();
    }
    const cpu1 = lifecycleCpu(t);
    return {
      lat,
      runtimeCpuPerPod: (cpu1.runtime - cpu0.runtime) / shape.pods,
      dockerdCpuPerPod: (cpu1.dockerd - cpu0.dockerd) / shape.pods,
    };
  } finally {
    // after a failure: whatever is left goes, without timing
    for (const p of pods) {
      await t.call('StopPodSandbox', { pod_sandbox_id: p.id }).catch(() => undefined);
      await t.call('RemovePodSandbox', { pod_sandbox_id: p.id }).catch(() => undefined);
    }
  }
}

/** The lifecycle p50s of crishim (the first target) and each other runtime, with crishim's ratio to each. */
export async function compareLifecycle(targets: LifecycleTarget[], shape: LifecycleShape): Promise<string> {
  const results: LifecycleRun[] = [];
  for (const t of targets) {
    if (shape.warmUpPods) await lifecycleOn(t, { ...shape, pods: shape.warmUpPods });
    results.push(await lifecycleOn(t, shape));
  }
  const row = (what: string, of: (r: LifecycleRun) => number): string[] => [
    what,
    ...results.map((r) => ms(of(r))),
    ...results.slice(1).map((r) => ratio(of(results[0]), of(r))),
  ];
  // a runtime that does not drive dockerd adds none of its CPU
  const both = (r: LifecycleRun): number =>
    r.runtimeCpuPerPod + (Number.isNaN(r.dockerdCpuPerPod) ? 0 : r.dockerdCpuPerPod);
  const rows = [
    ...LIFECYCLE_CALLS.map((call) => row(`${call} p50`, (r) => pct(r.lat.get(call) ?? [], 50))),
    row('runtime CPU per pod', (r) => r.runtimeCpuPerPod),
    row('dockerd CPU per pod', (r) => r.dockerdCpuPerPod),
    row('runtime + dockerd CPU per pod', both),
  ];
  const header = [
    'call',
    ...targets.map((t) => t.name),
    ...targets.slice(1).map((t) => `${targets[0].name} / ${t.name}`),
  ];
  const each = shape.containers === 1 ? '' : ` of ${shape.containers} containers`;
  const title = `pod lifecycle, ${shape.pods} pods${each} one call at a time, runtimes in turn`;
  // containerd's shims are processes of their own, one per pod: not in its figure
  const note = "CPU per pod: the whole run (the calls above) divided by the pods; a runtime's own process only";
  const warm = shape.warmUpPods ? `\n  each runtime first took ${shape.warmUpPods} pods through it, not counted` : '';
  return `${title}\n  ${note}${warm}\n${table(header, rows)}`;
}
