/**
 * crishim benchmark: every figure is measured in the same run as its raw-Docker
 * baseline and reported as a ratio, so a noisy shared machine moves both alike.
 *
 *   npm run bench            full run (minutes; 200 pods at the largest size)
 *   npm run bench -- --smoke a seconds-long run of every section (CI)
 *   npm run bench -- --only=kubelet-load   some sections (overhead, concurrent, lists, memory, kubelet-load, relist-cost, lifecycle, churn, churn-restart,
 *                                          stats-cost, stop-pod, pod-start, cycles, logs); --pods=N sizes stats-cost and stop-pod;
 *                                          --start-pods=30,110 sizes the pod-start bursts;
 *                                          --load-pods=N and --load-seconds=S size kubelet-load (a soak: S=1800;
 *                                          the raw-Docker baseline and the replaying floor keep their 60 s);
 *                                          --lifecycle-containers=N gives each lifecycle pod N containers
 *   CRISHIM_BENCH_NODE_FLAGS=--cpu-prof    node flags for the daemon (a profile lands in the working directory)
 *   CRISHIM_BENCH_IMAGE=REF                the pods' container image (default crishim-test/busybox:latest, which
 *                                          must run `sleep`)
 *   npm run bench -- --executable=DIR/usr/bin/crishim   every section on the single executable, as
 *                            `dpkg-deb -x dist-pkg/crishim_*.deb DIR` installs it (docs/benchmarks.md says why extracted)
 *   npm run bench -- --only=kubelet-load,lifecycle --compare=unix:///run/other.sock:other:PID_OR_PIDFILE[,...]
 *                            the same load and lifecycle against any other CRI runtime, in turn, tabled beside crishim
 *   npm run bench -- --report docs/benchmarks.md   also writes the run's figures into that file, between its
 *                            bench-report markers, replacing the figures there (bench/report.ts)
 *
 * Needs root, dockerd, the CNI plugins and the images from scripts/build-images.sh. DOCKER_HOST=unix://...
 * (with DOCKERD_PIDFILE for its CPU) points it at another engine.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { promises as fsp, existsSync } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import Docker from 'dockerode';
import type { RuntimeServiceClient } from '../src/generated/runtime/v1/RuntimeService';
import type { ImageServiceClient } from '../src/generated/runtime/v1/ImageService';
import { kubeletLoad } from './kubelet-load';
import { PodCgroups } from './pod-cgroups';
import { PodLogDirs } from './pod-logs';
import { startReplayFloor } from './replay-floor';
import { churn, churnAcrossRestarts } from './churn';
import { connectCri, criCall, parseCompare, resolvePid, type CriClient } from './cri-endpoint';
import { connectKubeletClient, type KubeletClient, type StatsRoundCall } from './kubelet-client';
import { compareKubeletLoad, compareLifecycle, type CompareTarget } from './runtime-compare';
import { statsCost } from './stats-cost';
import { stopPod } from './stop-pod';
import { podStart } from './pod-start';
import { relistCost } from './relist-cost';
import { cycles } from './cycles';
import { dockerdPid, pct, processCpuMs, rssMiB } from './measure';
import { daemonCommand, executableArg } from './daemon-command';
import { BENCH_ENV, readMachine, renderReport, reportArg, rewriteReport, type SectionFigures } from './report';

// compiled to bench/dist/bench/bench.js
const REPO = path.resolve(__dirname, '..', '..', '..');
const SMOKE = process.argv.includes('--smoke');
/** `--only=memory,kubelet-load` runs those sections alone (each takes minutes at full size). */
const ONLY = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice('--only='.length)
  .split(',');
const wanted = (section: string): boolean => !ONLY || ONLY.includes(section);
const COMPARE = parseCompare(process.argv);
/** `--executable=PATH`: measure the packaged single executable instead of dist/main.js (daemon-command.ts). */
const EXECUTABLE = executableArg(process.argv);
/** `--report FILE`: where the run's figures are written (bench/report.ts), relative to where npm was run. */
const REPORT = reportArg(process.argv.slice(2));
const PAUSE = 'registry.k8s.io/pause:3.10';
const BUSYBOX = process.env.CRISHIM_BENCH_IMAGE || 'crishim-test/busybox:latest';
const docker = new Docker();

/** The number given as `--NAME=N`, NaN for a value that is not one, undefined when the flag is absent. */
function numberArg(name: string): number | undefined {
  const value = process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return value === undefined ? undefined : Number(value);
}

const sizes = SMOKE
  ? { overhead: 5, concurrent: 4, lists: [2, 5], cycles: 20 }
  : { overhead: 30, concurrent: 50, lists: [10, 100, 200], cycles: 1000 };
const PODS = numberArg('pods') || undefined;
const statsCostSizes = { pods: PODS ?? (SMOKE ? 3 : 110), calls: SMOKE ? 3 : 9, tieredUp: SMOKE ? 0 : 40 };
const stopPods = PODS ?? (SMOKE ? 4 : 20);
/** `--start-pods=30,110`: the pod-start section's burst sizes. */
const startPodsArg = process.argv.find((a) => a.startsWith('--start-pods='))?.slice('--start-pods='.length);
const podStartSizes = {
  pods: startPodsArg ? startPodsArg.split(',').map(Number) : SMOKE ? [3] : [30, 110],
  rounds: SMOKE ? 1 : 2,
  probers: SMOKE ? 3 : 30,
  probesEach: SMOKE ? 3 : 20,
};
const relistSizes = SMOKE ? { pods: 3, calls: 50 } : { pods: 110, calls: 500 };
const loadSizes = SMOKE
  ? { pods: 3, seconds: 5, statsEveryMs: 2000, podSyncCycleMs: 5000, logMonitorEveryMs: 2000 }
  : { pods: 110, seconds: 60, statsEveryMs: 10_000, podSyncCycleMs: 60_000, logMonitorEveryMs: 10_000 };
/** `--load-pods=20`: the kubelet load at another pod count; `--load-seconds=1800`: for longer (a soak). */
const loadSizesNow = {
  ...loadSizes,
  pods: numberArg('load-pods') ?? loadSizes.pods,
  seconds: numberArg('load-seconds') ?? loadSizes.seconds,
  baselineSeconds: loadSizes.seconds,
};
const lifecyclePods = SMOKE ? 3 : 20;
/** `--lifecycle-containers=3`: the lifecycle's pods with more than one container each. */
const lifecycleContainers = numberArg('lifecycle-containers') || 1;
/** `--cycles=N`: the memory flatness section at another length. */
const cycleSizes = {
  cycles: numberArg('cycles') ?? (SMOKE ? 20 : 1000),
  parallel: 4,
  statsEveryMs: SMOKE ? 2000 : 10_000,
};

type Row = [string, string, string, string];
const rows: Row[] = [];
/** Tables of their own (runtime comparisons), printed after the main one. */
const tables: string[] = [];
/** The same rows and tables by the section that made them, for `--report`. */
const sections: SectionFigures[] = [];
/** Runs one section: what it records is filed under its name. */
async function section<T>(name: string, run: () => Promise<T>): Promise<T> {
  sections.push({ section: name, rows: [], tables: [] });
  return run();
}
const current = (): SectionFigures | undefined => sections[sections.length - 1];
const record = (what: string, crishim: string, raw: string, ratio: string): void => {
  rows.push([what, crishim, raw, ratio]);
  current()?.rows.push([what, crishim, raw, ratio]);
};
const addTable = (t: string): void => {
  tables.push(t);
  current()?.tables.push(t);
};

const ms = (n: number): string => `${n.toFixed(1)} ms`;
async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = process.hrtime.bigint();
  const r = await fn();
  return [Number(process.hrtime.bigint() - t0) / 1e6, r];
}

interface Daemon {
  proc: ChildProcess;
  runtime: RuntimeServiceClient;
  image: ImageServiceClient;
  kubelet: KubeletClient;
  /** Where the daemon listens (`unix://...`). */
  endpoint: string;
  dir: string;
  /** Docker API requests crishim made so far, counted by the proxy it talks through. */
  dockerRequests(): number;
  /** The same requests by kind (`POST /containers/{id}/start`), for where a section's calls go. */
  dockerRequestKinds(): Map<string, number>;
  closeProxy(): void;
  /** Where the daemon writes its memory report on SIGUSR2 (src/memory-report.ts). */
  memoryReport: string;
}

interface DaemonOptions {
  /** Node flags before CRISHIM_BENCH_NODE_FLAGS (e.g. --expose-gc for the cycles section). */
  nodeFlags?: string[];
  /** The Docker socket the daemon drives (a private dockerd), else the one the bench measures. */
  engine?: string;
}

/** The engine the bench measures: DOCKER_HOST's socket when it names one (a private dockerd), else the default. */
function dockerSocket(): string {
  const host = process.env.DOCKER_HOST ?? '';
  return host.startsWith('unix://') ? host.slice('unix://'.length) : '/var/run/docker.sock';
}

/**
 * A counting relay between crishim and dockerd: every HTTP request line that
 * crosses it is one Docker API call. Counting outside the daemon keeps the
 * measurement honest (no self-reporting, no scrape traffic mixed in).
 */
async function dockerProxy(
  socketPath: string,
  upstreamSocket: string,
): Promise<{ count(): number; kinds(): Map<string, number>; close(): void }> {
  let requests = 0;
  const kinds = new Map<string, number>();
  const REQUEST_LINE = /(GET|POST|PUT|DELETE|HEAD) (\/[^?\s]*)\S* HTTP\/1\.[01]\r\n/g;
  const server = net.createServer((client) => {
    const upstream = net.connect(upstreamSocket);
    client.on('data', (c: Buffer) => {
      for (const m of c.toString('latin1').matchAll(REQUEST_LINE)) {
        requests++;
        // ids and the API version prefix out, so one kind of call counts as one
        const kind = `${m[1]} ${m[2].replace(/^\/v[\d.]+/, '').replace(/[0-9a-f]{64}/g, '{id}')}`;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      upstream.write(c);
    });
    upstream.pipe(client);
    client.on('end', () => upstream.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return { count: () => requests, kinds: () => new Map(kinds), close: () => server.close() };
}

async function startDaemon(opts: DaemonOptions = {}): Promise<Daemon> {
  const engine = opts.engine ?? dockerSocket();
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-bench-'));
  const confDir = path.join(dir, 'net.d');
  await fsp.mkdir(confDir);
  const conf = JSON.parse(await fsp.readFile(path.join(REPO, 'cni', '10-crishim.conflist'), 'utf8'));
  conf.name = 'crishim-bench';
  conf.plugins[0].bridge = 'crishimbench0';
  conf.plugins[0].ipam.ranges = [[{ subnet: '10.88.240.0/21' }]];
  conf.plugins[0].ipam.dataDir = path.join(dir, 'ipam');
  await fsp.writeFile(path.join(confDir, '10-bench.conflist'), JSON.stringify(conf));
  const socket = path.join(dir, 'crishim.sock');
  const proxy = await dockerProxy(path.join(dir, 'docker-proxy.sock'), engine);
  const memoryReport = path.join(dir, 'memory-report.json');
  const daemon = daemonCommand(REPO, EXECUTABLE, [
    ...(opts.nodeFlags ?? []),
    // e.g. CRISHIM_BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' (NODE_OPTIONS refuses --cpu-prof)
    ...(process.env.CRISHIM_BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean),
  ]);
  const proc = spawn(
    daemon.command,
    [
      ...daemon.args,
      '--container-runtime-endpoint',
      `unix://${socket}`,
      '--root-directory',
      path.join(dir, 'root'),
      '--cni-conf-dir',
      confDir,
      '--docker-endpoint',
      `unix://${path.join(dir, 'docker-proxy.sock')}`,
      '--log-level',
      'warn',
      '--log-format',
      'json',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...daemon.env, CRISHIM_MEMORY_REPORT: memoryReport } },
  );
  let log = '';
  proc.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  const { runtime, image, kubelet } = connectCri(`unix://${socket}`, REPO);
  for (let i = 0; i < 200 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 50));
  if (!existsSync(socket)) throw new Error(`crishim did not start; log: ${log}`);
  return {
    proc,
    runtime,
    image,
    kubelet,
    endpoint: `unix://${socket}`,
    dir,
    dockerRequests: proxy.count,
    dockerRequestKinds: proxy.kinds,
    closeProxy: proxy.close,
    memoryReport,
  };
}

function rpc<T>(d: Pick<Daemon, 'runtime'>, method: string, req: unknown): Promise<T> {
  return criCall<T>(d.runtime, method, req);
}

let podSeq = 0;
/** The kubelet's log directories for the pods runPodWithApp makes (every runtime under load logs as under a kubelet). */
const podLogs = new PodLogDirs();
function pod(
  hostNetwork: boolean,
  cgroupParent?: string,
): { metadata: { name: string; namespace: string; uid: string; attempt: number } } & Record<string, unknown> {
  podSeq++;
  return {
    metadata: {
      name: `bench-${podSeq}`,
      namespace: 'crishim-bench',
      uid: `bench-${process.pid}-${podSeq}`,
      attempt: 0,
    },
    labels: { 'crishim-bench': 'true' },
    linux: {
      ...(hostNetwork ? { security_context: { namespace_options: { network: 'NODE' } } } : {}),
      ...(cgroupParent ? { cgroup_parent: cgroupParent } : {}),
    },
  };
}

/**
 * RunPodSandbox + CreateContainer + StartContainer of a sleeping busybox, as a kubelet starts a
 * pod. A pod whose container step fails is removed before the error goes up, so no section
 * leaves a sandbox behind on a failed start; the error says if that removal failed too.
 */
async function runPodWithApp(d: Pick<Daemon, 'runtime'>, hostNetwork: boolean, cgroupParent?: string): Promise<string> {
  const base = pod(hostNetwork, cgroupParent);
  const logDir = podLogs.make(base.metadata, 'app');
  const config = { ...base, log_directory: logDir };
  const { pod_sandbox_id: id } = await rpc<{ pod_sandbox_id: string }>(d, 'RunPodSandbox', { config });
  podLogs.own(id, logDir);
  try {
    const { container_id: c } = await rpc<{ container_id: string }>(d, 'CreateContainer', {
      pod_sandbox_id: id,
      config: {
        metadata: { name: 'app', attempt: 0 },
        image: { image: BUSYBOX },
        command: ['sleep', '3600'],
        log_path: 'app/0.log',
      },
      sandbox_config: config,
    });
    await rpc(d, 'StartContainer', { container_id: c });
  } catch (err) {
    const undone = await removePod(d, id).then(
      () => '',
      (e: Error) => `; removing its pod ${id} failed too: ${e.message}`,
    );
    throw new Error(`${(err as Error).message}${undone}`, { cause: err });
  }
  return id;
}

async function removePod(d: Pick<Daemon, 'runtime'>, id: string): Promise<void> {
  await rpc(d, 'StopPodSandbox', { pod_sandbox_id: id });
  await rpc(d, 'RemovePodSandbox', { pod_sandbox_id: id });
  podLogs.remove(id);
}

async function overhead(d: Daemon): Promise<void> {
  const raw: number[] = [];
  const viaCri: number[] = [];
  const viaCni: number[] = [];
  const rawOnce = async (): Promise<void> => {
    const [t, c] = await timed(async () => {
      const c = await docker.createContainer({
        Image: PAUSE,
        HostConfig: { NetworkMode: 'host', IpcMode: 'shareable' },
        Labels: { 'crishim-bench': 'raw' },
      });
      await c.start();
      return c;
    });
    raw.push(t);
    await c.remove({ force: true });
  };
  const criOnce = async (hostNetwork: boolean, into: number[]): Promise<void> => {
    const [t, r] = await timed(() => rpc<{ pod_sandbox_id: string }>(d, 'RunPodSandbox', { config: pod(hostNetwork) }));
    into.push(t);
    await removePod(d, r.pod_sandbox_id);
  };
  for (let i = 0; i < sizes.overhead; i++) {
    // alternate the order so neither side always runs on a warmer engine
    if (i % 2 === 0) {
      await rawOnce();
      await criOnce(true, viaCri);
    } else {
      await criOnce(true, viaCri);
      await rawOnce();
    }
    await criOnce(false, viaCni);
  }
  record(
    'RunPodSandbox p50, host network vs raw create+start',
    ms(pct(viaCri, 50)),
    ms(pct(raw, 50)),
    (pct(viaCri, 50) / pct(raw, 50)).toFixed(2),
  );
  record(
    'RunPodSandbox p50 with CNI (bridge+portmap)',
    ms(pct(viaCni, 50)),
    ms(pct(raw, 50)),
    (pct(viaCni, 50) / pct(raw, 50)).toFixed(2),
  );
}

async function concurrent(d: Daemon): Promise<void> {
  const lat: number[] = [];
  let failures = 0;
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: sizes.concurrent }, async () => {
      try {
        const [t, id] = await timed(() => runPodWithApp(d, false));
        ids.push(id);
        lat.push(t);
      } catch {
        failures++;
      }
    }),
  );
  await Promise.all(ids.map((id) => removePod(d, id).catch(() => failures++)));
  const leaks = await leftovers(d);
  record(
    `${sizes.concurrent} concurrent pods (run+create+start) p50 / p95`,
    `${ms(pct(lat, 50))} / ${ms(pct(lat, 95))}`,
    '-',
    `${failures} failures, ${leaks} leaks`,
  );
}

/** What a torn-down bench pod may not leave: containers (pause or app), checkpoints, CNI cache entries, IP reservations. */
async function leftovers(d: Daemon): Promise<number> {
  // this run's daemon only (its root directory label): a bench run killed earlier must not count here
  const containers = await docker.listContainers({
    all: true,
    filters: { label: ['io.kubernetes.pod.namespace=crishim-bench', `io.crishim.root=${path.join(d.dir, 'root')}`] },
  });
  const files = async (dir: string, keep: (f: string) => boolean): Promise<number> =>
    (await fsp.readdir(dir).catch(() => [] as string[])).filter(keep).length;
  const checkpoints = await files(path.join(d.dir, 'root', 'sandbox'), (f) => f.endsWith('.json'));
  const cniCache = await files(path.join(d.dir, 'root', 'cni-cache'), () => true);
  // host-local keeps one file per reserved IP, beside its lock and last_reserved_ip.* bookkeeping
  const ips = await files(
    path.join(d.dir, 'ipam', 'crishim-bench'),
    (f) => f !== 'lock' && !f.startsWith('last_reserved_ip'),
  );
  return containers.length + checkpoints + cniCache + ips;
}

async function lists(d: Daemon): Promise<void> {
  const ids: string[] = [];
  for (const n of sizes.lists) {
    while (ids.length < n) ids.push(await runPodWithApp(d, true));
    // the baseline is the very Docker query the RPC makes, issued directly
    const rawFor = async (type: string): Promise<number[]> => {
      const ts: number[] = [];
      for (let i = 0; i < 5; i++)
        ts.push(
          (
            await timed(() =>
              docker.listContainers({ all: true, filters: { label: [`io.kubernetes.docker.type=${type}`] } }),
            )
          )[0],
        );
      return ts;
    };
    const rawSandboxes = await rawFor('podsandbox');
    const rawContainers = await rawFor('container');
    for (const method of ['ListPodSandbox', 'ListContainers', 'ListContainerStats']) {
      const rawT = method === 'ListPodSandbox' ? rawSandboxes : rawContainers;
      const ts: number[] = [];
      const calls: number[] = [];
      let failed = '';
      for (let i = 0; i < 5; i++) {
        const before = d.dockerRequests();
        try {
          ts.push((await timed(() => rpc(d, method, {})))[0]);
        } catch (e) {
          failed = (e as grpc.ServiceError).details ?? String(e);
          break;
        }
        calls.push(d.dockerRequests() - before);
      }
      // steady state is the least over several tries (the background health probe may land in
      // one); the first call is shown too, since it pays for whatever is cached afterwards
      const steady = Math.min(...calls.slice(1));
      if (failed) record(`${method} at ${n} pods`, `failed: ${failed.slice(0, 60)}`, ms(pct(rawT, 50)), '-');
      else
        record(
          `${method} at ${n} pods (docker calls per RPC: ${steady}; first call: ${calls[0]})`,
          ms(pct(ts, 50)),
          ms(pct(rawT, 50)),
          (pct(ts, 50) / pct(rawT, 50)).toFixed(2),
        );
    }
  }
  await Promise.all(ids.map((id) => removePod(d, id)));
}

async function memory(d: Daemon): Promise<void> {
  const config = pod(true);
  const { pod_sandbox_id: id } = await rpc<{ pod_sandbox_id: string }>(d, 'RunPodSandbox', { config });
  const cycle = async (): Promise<void> => {
    const { container_id: c } = await rpc<{ container_id: string }>(d, 'CreateContainer', {
      pod_sandbox_id: id,
      config: { metadata: { name: `m${podSeq++}`, attempt: 0 }, image: { image: BUSYBOX }, command: ['true'] },
      sandbox_config: config,
    });
    await rpc(d, 'RemoveContainer', { container_id: c });
  };
  for (let i = 0; i < 20; i++) await cycle();
  const idle = rssMiB(d.proc.pid ?? 0);
  // sampled along the way: a leak keeps climbing, heap warm-up levels off
  const samples: number[] = [];
  for (let i = 1; i <= sizes.cycles; i++) {
    await cycle();
    if (i % Math.max(1, Math.floor(sizes.cycles / 4)) === 0) samples.push(rssMiB(d.proc.pid ?? 0));
  }
  const after = samples[samples.length - 1] ?? idle;
  const mib = (m: number): string => m.toFixed(1);
  record(
    `daemon RSS idle / after ${sizes.cycles} create+remove cycles (quarters: ${samples.map(mib).join(', ')} MiB)`,
    `${mib(idle)} MiB / ${mib(after)} MiB`,
    '-',
    (after / idle).toFixed(2),
  );
  await removePod(d, id);
}

// ---- logs: Docker's json-file -> CRI file, against Docker's own write of the same output ----

const logSizes = SMOKE
  ? { burst: 20_000, killed: 10_000, chatty: 4, chattyLines: 5_000 }
  : { burst: 1_000_000, killed: 400_000, chatty: 20, chattyLines: 100_000 };

interface LogDaemon {
  proc: ChildProcess;
  runtime: RuntimeServiceClient;
  dir: string;
  restart(kill: boolean): Promise<void>;
  close(): Promise<void>;
}

/** A crishim of its own for the logs section (host-network pods, no CNI), restartable with kill -9. */
async function startLogDaemon(): Promise<LogDaemon> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-bench-logs-'));
  const socket = path.join(dir, 'crishim.sock');
  const daemon = daemonCommand(REPO, EXECUTABLE, []);
  const args = [
    ...daemon.args,
    '--container-runtime-endpoint',
    `unix://${socket}`,
    '--root-directory',
    path.join(dir, 'root'),
    '--network-plugin',
    'none',
    '--log-level',
    'warn',
    '--log-format',
    'json',
  ];
  const { runtime } = connectCri(`unix://${socket}`, REPO);
  const launch = async (): Promise<ChildProcess> => {
    await fsp.rm(socket, { force: true });
    const proc = spawn(daemon.command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: daemon.env });
    proc.stderr?.on('data', (c: Buffer) => {
      // a loss, or a copy through the logs API, would make the figures meaningless: show it
      if (/were lost|logs API/.test(c.toString())) process.stderr.write(c);
    });
    for (let i = 0; i < 400 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 50));
    if (!existsSync(socket)) throw new Error('crishim (logs) did not start');
    return proc;
  };
  const exit = (p: ChildProcess): Promise<void> =>
    new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r() : p.once('exit', () => r())));
  const d: LogDaemon = {
    proc: await launch(),
    runtime,
    dir,
    async restart(kill) {
      d.proc.kill(kill ? 'SIGKILL' : 'SIGTERM');
      await exit(d.proc);
      d.proc = await launch();
    },
    async close() {
      d.proc.kill('SIGTERM');
      await exit(d.proc);
      runtime.close();
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
  return d;
}

/** utime + stime of a process, in seconds. */
const cpuSeconds = (pid: number): number => processCpuMs(pid) / 1000;

interface Burst {
  id: string;
  file: string;
  lines: number;
}

async function startBurst(
  d: LogDaemon,
  podId: string,
  podConfig: Record<string, unknown>,
  name: string,
  lines: number,
  logDir: string,
): Promise<Burst> {
  const { container_id: id } = await rpc<{ container_id: string }>(d, 'CreateContainer', {
    pod_sandbox_id: podId,
    config: {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX },
      command: ['sh', '-c', `seq 1 ${lines} | sed 's/^/n=/'`],
      log_path: `${name}.log`,
    },
    sandbox_config: podConfig,
  });
  await rpc(d, 'StartContainer', { container_id: id });
  return { id, file: path.join(logDir, `${name}.log`), lines };
}

/**
 * When Docker wrote the burst's last record to its json-file (the file's mtime). Docker stamps a
 * record when it reads it from the container, and under load writes it later: the copy can only
 * start then.
 */
async function dockerLastWrite(b: Burst): Promise<number> {
  const info = await docker.getContainer(b.id).inspect();
  return (await fsp.stat(info.LogPath)).mtimeMs;
}

/** Resolves with the wall time (ms) at which the burst's last line is in the CRI file. */
async function copiedAt(b: Burst, timeoutMs: number): Promise<number> {
  const want = Buffer.from(` F n=${b.lines}\n`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const fd = await fsp.open(b.file, 'r').catch(() => undefined);
    if (fd) {
      const { size } = await fd.stat();
      const tail = Buffer.alloc(Math.min(size, want.length));
      await fd.read(tail, 0, tail.length, size - tail.length);
      await fd.close();
      if (tail.equals(want)) return Date.now();
    }
    if (Date.now() > deadline) throw new Error(`${b.file}: last line not copied within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface BurstCheck {
  /** '' when every line is there once, in order. */
  problem: string;
  /** Docker's times of the first and last record (ms). */
  firstMs: number;
  lastMs: number;
  /** json-file bytes Docker wrote for these records (re-encoded as Docker does). */
  jsonBytes: number;
  criBytes: number;
}

/** Reads the CRI file: n=1..N exactly once and in order, and Docker's own times of the first and last line. */
async function checkBurst(b: Burst): Promise<BurstCheck> {
  const text = await fsp.readFile(b.file, 'utf8');
  let expect = 1;
  let problem = '';
  let jsonBytes = 0;
  let first = '';
  let last = '';
  for (const entry of text.split('\n')) {
    if (!entry) continue;
    const sp = entry.indexOf(' ');
    const time = entry.slice(0, sp);
    const content = entry.slice(sp + ' stdout F '.length);
    if (!problem && content !== `n=${expect}`) problem = `line ${expect}: got ${JSON.stringify(content.slice(0, 40))}`;
    expect += 1;
    first ||= time;
    last = time;
    // {"log":"n=1\n","stream":"stdout","time":"..."} + newline
    jsonBytes += JSON.stringify({ log: `${content}\n`, stream: 'stdout', time }).length + 1;
  }
  if (!problem && expect - 1 !== b.lines) problem = `${expect - 1} lines for ${b.lines}`;
  const ms = (t: string): number => Number(rfc3339Ms(t));
  return { problem, firstMs: ms(first), lastMs: ms(last), jsonBytes, criBytes: Buffer.byteLength(text) };
}

/** Milliseconds (with the sub-millisecond part) of an RFC 3339 time with nanoseconds. */
function rfc3339Ms(t: string): number {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(t);
  if (!m) return NaN;
  return Date.parse(`${m[1]}Z`) + Number(`0.${m[2] ?? '0'}`) * 1000;
}

const mb = (bytes: number): string => (bytes / 1e6).toFixed(1);

async function logs(): Promise<void> {
  const d = await startLogDaemon();
  const logDir = path.join(d.dir, 'pods');
  await fsp.mkdir(logDir, { recursive: true });
  const config = { ...pod(true), log_directory: logDir };
  const { pod_sandbox_id: podId } = await rpc<{ pod_sandbox_id: string }>(d, 'RunPodSandbox', { config });
  try {
    // 1. a burst: exactly once, lag after Docker's last write, throughput and CPU beside dockerd's
    const cpu0 = { crishim: cpuSeconds(d.proc.pid ?? 0), dockerd: cpuSeconds(dockerdPid()) };
    const burst = await startBurst(d, podId, config, 'burst', logSizes.burst, logDir);
    const doneAt = await copiedAt(burst, 600_000);
    const cpu1 = { crishim: cpuSeconds(d.proc.pid ?? 0), dockerd: cpuSeconds(dockerdPid()) };
    const wroteAt = await dockerLastWrite(burst);
    const b = await checkBurst(burst);
    const dockerS = (b.lastMs - b.firstMs) / 1000;
    const copyS = (doneAt - b.firstMs) / 1000;
    record(
      `logs: ${logSizes.burst.toLocaleString('en')}-line burst (${mb(b.jsonBytes)} MB json-file), exactly once / last line copied after Docker wrote it`,
      b.problem ? `FAILED: ${b.problem}` : `exactly once, +${((doneAt - wroteAt) / 1000).toFixed(2)} s`,
      `written in ${dockerS.toFixed(2)} s`,
      b.problem ? 'lines lost or repeated' : 'ok',
    );
    record(
      'logs: copy throughput vs Docker writing the same json-file',
      `${(b.jsonBytes / 1e6 / copyS).toFixed(1)} MB/s`,
      `${(b.jsonBytes / 1e6 / dockerS).toFixed(1)} MB/s`,
      (dockerS / copyS).toFixed(2),
    );
    const perMb = (s: number): string => `${(s / (b.jsonBytes / 1e6)).toFixed(3)} s/MB`;
    record(
      'logs: CPU seconds per MB of json-file (crishim copying vs dockerd writing it)',
      perMb(cpu1.crishim - cpu0.crishim),
      perMb(cpu1.dockerd - cpu0.dockerd),
      ((cpu1.crishim - cpu0.crishim) / Math.max(0.01, cpu1.dockerd - cpu0.dockerd)).toFixed(2),
    );

    // 2. the same with crishim killed -9 in the middle and started again
    const killed = await startBurst(d, podId, config, 'killed', logSizes.killed, logDir);
    const half = Math.floor(logSizes.killed / 2);
    for (;;) {
      const size = (await fsp.stat(killed.file).catch(() => undefined))?.size ?? 0;
      // ~48 bytes of CRI file per line ("<time> stdout F n=123456"): restart once about half is copied
      if (size >= half * 48) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    await d.restart(true);
    const killedDone = await copiedAt(killed, 600_000);
    const killedWrote = await dockerLastWrite(killed);
    const k = await checkBurst(killed);
    record(
      `logs: ${logSizes.killed.toLocaleString('en')}-line burst, crishim killed -9 and restarted mid-burst`,
      k.problem ? `FAILED: ${k.problem}` : `exactly once, +${((killedDone - killedWrote) / 1000).toFixed(2)} s`,
      `written in ${((k.lastMs - k.firstMs) / 1000).toFixed(2)} s`,
      k.problem ? 'lines lost or repeated' : 'ok',
    );

    // 3. chatty containers at once: every one complete, and how far apart they finish
    const chatty = await Promise.all(
      Array.from({ length: logSizes.chatty }, (_, i) =>
        startBurst(d, podId, config, `chatty${i}`, logSizes.chattyLines, logDir),
      ),
    );
    const done = await Promise.all(chatty.map((c) => copiedAt(c, 600_000)));
    const wrote = await Promise.all(chatty.map((c) => dockerLastWrite(c)));
    const checks = await Promise.all(chatty.map((c) => checkBurst(c)));
    const lags = checks.map((_, i) => (done[i] - wrote[i]) / 1000);
    // Docker's own delay: from stamping each container's last record to writing it
    const dockerDelay = checks.map((c, i) => (wrote[i] - c.lastMs) / 1000);
    const failed = checks.filter((c) => c.problem).length;
    record(
      `logs: ${logSizes.chatty} chatty containers x ${logSizes.chattyLines.toLocaleString('en')} lines at once, last line copied after Docker wrote it, min / max`,
      `${Math.min(...lags).toFixed(2)} s / ${Math.max(...lags).toFixed(2)} s`,
      `written in ${Math.max(...checks.map((c) => (c.lastMs - c.firstMs) / 1000)).toFixed(2)} s, stamp-to-write up to ${Math.max(...dockerDelay).toFixed(2)} s`,
      failed
        ? `${failed} not exactly once`
        : `all exactly once, spread ${(Math.max(...lags) - Math.min(...lags)).toFixed(2)} s`,
    );
  } finally {
    await removePod(d, podId).catch(() => undefined);
    await d.close();
  }
}

/** A `--compare` runtime as a load target: the same pods as crishim's, made through its own CRI. */
async function compareTarget(
  c: CriClient,
  name: string,
  pid: number,
  parent: () => string | undefined,
): Promise<CompareTarget> {
  const { runtime_name: runtimeName } = await rpc<{ runtime_name: string }>(c, 'Version', {});
  // one trial pod first: a runtime that cannot make the load's pod (a sandbox image it cannot pull
  // offline) fails the run here, not after crishim's sections have spent their minutes
  const trial = await runPodWithApp(c, false).catch((err: Error) => {
    throw new Error(`--compare ${name}: cannot run the load's pod: ${err.message}`, { cause: err });
  });
  await removePod(c, trial);
  return {
    name,
    pid,
    usesDocker: runtimeName === 'docker',
    call: (method, req) => rpc(c, method, req),
    relist: () => c.kubelet.relist(),
    statsRound: (calls?: readonly StatsRoundCall[]) => c.kubelet.statsRound(calls),
    imageFsInfo: () => criCall(c.image, 'ImageFsInfo', {}),
    runPod: () => runPodWithApp(c, false, parent()),
    removePod: (id) => removePod(c, id),
  };
}

async function main(): Promise<void> {
  // a report file without its markers fails now, not after the sections' minutes
  if (REPORT) rewriteReport(await fsp.readFile(reportPath(REPORT), 'utf8'), '', REPORT);
  // --logs-only: just the logs section (its full run takes minutes of its own)
  if (process.argv.includes('--logs-only')) {
    await section('logs', logs);
    return report();
  }
  // a pod cgroup of the kubelet's shape is a path only under the cgroupfs driver
  const cgroupfs = (await docker.info()).CgroupDriver === 'cgroupfs';
  // the kubelet load's pods, crishim's and every compared runtime's, each in a cgroup of its own
  const loadCgroups = cgroupfs ? new PodCgroups('kubelet-load') : undefined;
  const loadParent = (): string | undefined => loadCgroups?.next();
  const clients = COMPARE.map((c) => connectCri(c.endpoint, REPO));
  const others = await Promise.all(
    COMPARE.map((c, i) => compareTarget(clients[i], c.name, resolvePid(c.pid), loadParent)),
  );
  const d = await startDaemon();
  try {
    if (wanted('overhead')) await section('overhead', () => overhead(d));
    if (wanted('concurrent')) await section('concurrent', () => concurrent(d));
    if (wanted('lists')) await section('lists', () => lists(d));
    if (wanted('memory')) await section('memory', () => memory(d));
    // crishim as every section's target sees it; a section overrides what it needs otherwise
    const target = {
      pid: d.proc.pid ?? 0,
      call: <T>(method: string, req: unknown) => rpc<T>(d, method, req),
      relist: () => d.kubelet.relist(),
      statsRound: () => d.kubelet.statsRound(),
      runPod: () => runPodWithApp(d, false),
      removePod: (id: string) => removePod(d, id),
      cniConfFile: path.join(d.dir, 'net.d', '10-bench.conflist'),
      dockerRequests: d.dockerRequests,
    };
    if (wanted('relist-cost'))
      await section('relist-cost', () =>
        relistCost(
          {
            ...target,
            runPod: () => runPodWithApp(d, true),
            kubeletClient: (authority) => connectKubeletClient(d.endpoint, authority),
          },
          docker,
          relistSizes,
          record,
        ),
      );
    if (wanted('kubelet-load'))
      await section('kubelet-load', async () => {
        const figures = await kubeletLoad(
          {
            ...target,
            runPod: () => runPodWithApp(d, false, loadParent()),
            imageFsInfo: () =>
              new Promise((resolve, reject) => d.image.ImageFsInfo({}, (e, r) => (e ? reject(e) : resolve(r)))),
            replayFloor: (podId) => startReplayFloor(d.endpoint, REPO, podId),
          },
          docker,
          loadSizesNow,
          record,
        );
        if (others.length) addTable(await compareKubeletLoad(figures, others, loadSizesNow));
      });
    if (wanted('lifecycle'))
      await section('lifecycle', async () => {
        const shape = {
          pods: lifecyclePods,
          containers: lifecycleContainers,
          podConfig: () => pod(false),
          image: BUSYBOX,
          warmUpPods: SMOKE ? 1 : 3,
        };
        addTable(
          await compareLifecycle(
            [{ name: 'crishim', call: target.call, pid: target.pid, usesDocker: true }, ...others],
            shape,
          ),
        );
      });
    if (wanted('churn'))
      await section('churn', () => churn({ runtime: d.runtime, image: BUSYBOX }, docker, SMOKE ? 2 : 50, record));
    if (wanted('churn-restart'))
      await section('churn-restart', () =>
        churnAcrossRestarts((engine) => startDaemon({ engine }), docker, BUSYBOX, SMOKE ? 1 : 50, record),
      );
    if (wanted('stats-cost'))
      await section('stats-cost', () => {
        const runPodIn = (parent: string): Promise<string> => runPodWithApp(d, false, parent);
        return statsCost({ ...target, runPodIn: cgroupfs ? runPodIn : undefined }, statsCostSizes, record);
      });
    if (wanted('stop-pod')) await section('stop-pod', () => stopPod(target, docker, stopPods, record));
    if (wanted('pod-start'))
      await section('pod-start', () =>
        podStart({
          crishim: {
            name: 'crishim',
            pid: target.pid,
            call: target.call,
            dockerRequests: d.dockerRequests,
            dockerRequestKinds: d.dockerRequestKinds,
          },
          others: others.map((o) => ({ name: o.name, pid: o.pid, call: o.call })),
          docker,
          cniConfFile: target.cniConfFile,
          pauseImage: PAUSE,
          image: BUSYBOX,
          sizes: podStartSizes,
          record,
          addTable,
        }),
      );
  } finally {
    for (const c of clients) c.close();
    await stopDaemon(d);
    await loadCgroups?.removeAll();
  }
  // a daemon of its own, started with --expose-gc, so its figures do not depend on the sections before
  if (wanted('cycles')) await section('cycles', cyclesSection);
  podLogs.removeAll();
  // --only without `logs` skips it: its full run holds the shared dockerd for minutes
  if (wanted('logs')) await section('logs', logs);
  await report();
}

/** Stops a daemon from startDaemon (waiting for it to exit) and removes its bridge and files. */
async function stopDaemon(d: Daemon): Promise<void> {
  const exited = new Promise<void>((r) =>
    d.proc.exitCode !== null || d.proc.signalCode !== null ? r() : d.proc.once('exit', () => r()),
  );
  d.proc.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  d.runtime.close();
  d.image.close();
  d.kubelet.close();
  d.closeProxy();
  try {
    execFileSync('ip', ['link', 'del', 'crishimbench0'], { stdio: 'ignore' });
  } catch {
    /* never created */
  }
  await fsp.rm(d.dir, { recursive: true, force: true });
}

/** Heap used after a forced GC, from the daemon's SIGUSR2 report (src/memory-report.ts); undefined without --expose-gc. */
async function heapUsedMiB(d: Daemon): Promise<number | undefined> {
  await fsp.rm(d.memoryReport, { force: true });
  d.proc.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    const text = await fsp.readFile(d.memoryReport, 'utf8').catch(() => '');
    if (text) {
      const r = JSON.parse(text) as { heapUsed: number; gc: boolean };
      return r.gc ? r.heapUsed / 2 ** 20 : undefined;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

async function cyclesSection(): Promise<void> {
  const d = await startDaemon({ nodeFlags: ['--expose-gc'] });
  try {
    await cycles(
      {
        pid: d.proc.pid ?? 0,
        call: <T>(method: string, req: unknown) => rpc<T>(d, method, req),
        runPod: () => runPodWithApp(d, false),
        removePod: (id) => removePod(d, id),
        heapUsedMiB: () => heapUsedMiB(d),
        leftovers: () => leftovers(d),
      },
      cycleSizes,
      record,
    );
  } finally {
    await stopDaemon(d);
  }
}

async function report(): Promise<void> {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const header: Row = ['measure', 'crishim', 'raw Docker', 'ratio / result'];
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i].length)));
  const line = (r: Row): string => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const version = await docker.version();
  process.stdout.write(
    `crishim bench${SMOKE ? ' (smoke)' : ''} on ${os.cpus().length} x ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Docker ${version.Version}, ${new Date().toISOString()}\n`,
  );
  process.stdout.write(`crishim ran as ${daemonCommand(REPO, EXECUTABLE, []).label}\n`);
  process.stdout.write(
    [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n') + '\n',
  );
  for (const t of tables) process.stdout.write(`\n${t}\n`);
  if (REPORT) await writeReport(REPORT, version);
}

/** npm runs the script from the package root; a relative FILE means where npm was invoked. */
function reportPath(file: string): string {
  return path.resolve(process.env.INIT_CWD ?? process.cwd(), file);
}

/** `--report FILE`: the run's figures, by section, into FILE between its markers (bench/report.ts). */
async function writeReport(file: string, version: Docker.DockerVersion): Promise<void> {
  const info = await docker.info();
  const env: Record<string, string> = {};
  for (const k of BENCH_ENV) if (process.env[k] !== undefined) env[k] = process.env[k] ?? '';
  const generated = renderReport(
    {
      argv: process.argv.slice(2),
      env,
      machine: readMachine({
        version: version.Version,
        apiVersion: version.ApiVersion,
        cgroupVersion: (info as { CgroupVersion?: string }).CgroupVersion,
        cgroupDriver: info.CgroupDriver,
      }),
      daemon: daemonCommand(REPO, EXECUTABLE, []).label,
      compared: COMPARE.map((c) => c.name),
      smoke: SMOKE,
    },
    sections,
  );
  const target = reportPath(file);
  const existing = await fsp.readFile(target, 'utf8');
  await fsp.writeFile(target, rewriteReport(existing, generated, file));
  process.stdout.write(`\nfigures written to ${target}\n`);
}

main().catch((err: unknown) => {
  podLogs.removeAll();
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
