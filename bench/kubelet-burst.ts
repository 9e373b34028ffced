/**
 * `npm run bench:kubelet-burst`: pod start-up under a real kubelet. For each runtime in turn
 * (crishim, cri-dockerd, containerd), a single-node cluster of test/kubernetes/cluster.ts, and in
 * it one Deployment of N busybox pods (`sleep`, an exec readiness probe `true` every 2 s):
 * creation to Ready of every pod as the API server's watch reports it (and to its container first
 * reported running, which splits the runtime's start path from the probes), then the time from the
 * Deployment's deletion until no pod is left, and the CPU time the runtime's process, dockerd
 * and the whole machine spent from creation until no pod is left. Runtimes alternate over rounds
 * (A B C, C B A, ...) and the best round counts. A second table has the kubelet's own view of the
 * runtime from creation until all were Ready: the mean latency of each CRI call it made, over
 * every round (its `kubelet_runtime_operations_duration_seconds`), so a call that waits in the
 * runtime shows beside the same call to the other runtimes.
 *
 *   KUBE_BIN_DIR=DIR npm run bench:kubelet-burst -- [--pods=30,110] [--rounds=2]
 *                       [--runtimes=crishim,cri-dockerd,containerd] [--report FILE]
 *
 * Needs what `npm run test:kubernetes` needs (docs/kubernetes.md), and for cri-dockerd a
 * `cri-dockerd` binary in KUBE_BIN_DIR. A runtime whose cluster cannot start fails the run.
 * CRISHIM_BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=DIR' profiles crishim, one file per round.
 * CRISHIM_BENCH_DAEMON_FLAGS and CRISHIM_BENCH_KUBELET_FLAGS add flags to crishim and the kubelet
 * (e.g. '--log-level debug', '--v=3') for reading a round's logs afterwards, not for timing it.
 */
import { spawn, type ChildProcess } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { CONTROL_PLANE, kubeBinaries } from '../test/kubernetes/binaries';
import { startCluster, waitFor, type Cluster } from '../test/kubernetes/cluster';
import { BUSYBOX, list, namespace, sleepers } from '../test/kubernetes/manifests';
import type { RuntimeKind } from '../test/kubernetes/runtimes';
import { dockerdPid, machineBusyMs, pct, processCpuMs } from './measure';
import { rewriteReport } from './report';
import { table } from './runtime-compare';

const arg = (name: string): string | undefined =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const SIZES = (arg('pods') ?? '30,110').split(',').map(Number);
const ROUNDS = Number(arg('rounds') ?? 2);
const RUNTIMES = (arg('runtimes') ?? 'crishim,cri-dockerd,containerd').split(',') as RuntimeKind[];
/** `--max-wait=S`: a burst not all Ready by then is recorded as such (how many were), not waited for. */
const MAX_WAIT_MS = Number(arg('max-wait') ?? 600) * 1000;
/** `--report=FILE`: the table goes into FILE between these markers, replacing the last run's. */
const REPORT = arg('report');
const MARKERS = {
  begin:
    '<!-- kubelet-burst:begin. Written by `npm run bench:kubelet-burst -- --report=<this file>`; never edit by hand. -->',
  end: '<!-- kubelet-burst:end -->',
};
const PAUSE = 'registry.k8s.io/pause:3.10';

interface BurstFigures {
  /** NaN when not every pod was Ready within MAX_WAIT_MS. */
  allReadyMs: number;
  readyMs: number[];
  /** Per pod, creation to its container first reported running (what the kubelet and runtime do before any probe). */
  runningMs: number[];
  teardownMs: number;
  /** CPU ms from the Deployment's creation until no pod is left: the runtime's process, dockerd's, the machine's. */
  cpuMs: { runtime: number; dockerd: number; machine: number };
  /** The kubelet's CRI calls from the Deployment's creation until all were Ready (or MAX_WAIT_MS), by operation. */
  kubeletOps: OpTotals;
}

/** Per kubelet operation type (`run_podsandbox`, `exec_sync`, ...): how many calls, and their seconds in all. */
type OpTotals = Map<string, { count: number; seconds: number }>;

const OP_METRIC = /^kubelet_runtime_operations_duration_seconds_(sum|count)\{operation_type="([^"]+)"\} (\S+)$/;

/** The kubelet's running totals of its CRI calls, from its /metrics. */
async function kubeletOpTotals(c: Cluster): Promise<OpTotals> {
  const totals: OpTotals = new Map();
  for (const line of (await c.kubeletGet('/metrics')).split('\n')) {
    const m = OP_METRIC.exec(line);
    if (!m) continue;
    const t = totals.get(m[2]) ?? { count: 0, seconds: 0 };
    if (m[1] === 'sum') t.seconds = Number(m[3]);
    else t.count = Number(m[3]);
    totals.set(m[2], t);
  }
  if (totals.size === 0) throw new Error('the kubelet /metrics has no kubelet_runtime_operations_duration_seconds');
  return totals;
}

/** `after` less `before`, keeping the operations called in between; or the sum of the two with `sign` 1. */
function addOps(a: OpTotals, b: OpTotals, sign: 1 | -1): OpTotals {
  const out: OpTotals = new Map();
  for (const [op, t] of a) {
    const u = b.get(op) ?? { count: 0, seconds: 0 };
    const count = t.count + sign * u.count;
    if (count > 0) out.set(op, { count, seconds: t.seconds + sign * u.seconds });
  }
  if (sign === 1) for (const [op, u] of b) if (!a.has(op)) out.set(op, u);
  return out;
}

/** CPU ms so far of the runtime's process, dockerd and the whole machine. */
function cpuNow(runtimePid: number): BurstFigures['cpuMs'] {
  return { runtime: processCpuMs(runtimePid), dockerd: processCpuMs(dockerdPid()), machine: machineBusyMs() };
}

const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/**
 * Streams the namespace's pods from the API server's watch; answers when `n` pods have been Ready.
 * `running` has when each pod's container was first reported running.
 */
function watchReady(
  c: Cluster,
  ns: string,
  n: number,
  t0: () => number,
): { done: Promise<number[]>; soFar(): number[]; running(): number[]; stop(): void } {
  const ready = new Map<string, number>();
  const running = new Map<string, number>();
  let watch: ChildProcess | undefined;
  let stopped = false;
  // the API server may end a watch under load (kubectl then exits 0): a new one lists the pods
  // again, and the times already seen stay
  let restartsLeft = 20;
  const done = new Promise<number[]>((resolve, reject) => {
    const follow = (): void => {
      if (stopped) return;
      const w = spawn(
        c.bins.path('kubectl'),
        [
          '--kubeconfig',
          c.kubeconfig,
          'get',
          'pods',
          '-n',
          ns,
          '--watch',
          '-o',
          'jsonpath={.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.status.containerStatuses[0].state.running.startedAt}{"\\n"}',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      watch = w;
      let buffered = '';
      w.stdout.on('data', (chunk: Buffer) => {
        const at = now() - t0();
        buffered += chunk.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) {
          const [name, status, startedAt] = line.trim().split(' ');
          if (name && startedAt && !running.has(name)) running.set(name, at);
          if (name && status === 'True' && !ready.has(name)) ready.set(name, at);
        }
        if (ready.size >= n) resolve([...ready.values()]);
      });
      w.on('exit', (code) => {
        if (stopped || ready.size >= n) return;
        if (code === 0 && restartsLeft-- > 0) setTimeout(follow, 100);
        else reject(new Error(`kubectl get --watch exited ${code} with ${ready.size}/${n} Ready`));
      });
    };
    follow();
  });
  const stop = (): void => {
    stopped = true;
    watch?.kill();
  };
  return { done, soFar: () => [...ready.values()], running: () => [...running.values()], stop };
}

async function burst(c: Cluster, n: number, seq: number): Promise<BurstFigures> {
  const ns = `burst-${n}-${seq}`;
  c.kubectl(['apply', '-f', '-'], { input: list([namespace(ns)]) });
  await waitFor(`the service account of ${ns}`, () =>
    c.kubectl(['get', 'serviceaccount', 'default', '-n', ns, '-o', 'name']),
  );
  const deployment = sleepers(ns, 'burst', n, {
    readinessProbe: { exec: { command: ['true'] }, periodSeconds: 2, timeoutSeconds: 1 },
  });
  let t0 = 0;
  const watch = watchReady(c, ns, n, () => t0);
  try {
    // the watch is open before the Deployment exists, so no transition is missed
    await new Promise((r) => setTimeout(r, 1000));
    const runtimePid = c.runtime.daemon.proc.pid;
    if (runtimePid === undefined) throw new Error(`${c.runtime.kind} has no process id`);
    const ops0 = await kubeletOpTotals(c);
    const cpu0 = cpuNow(runtimePid);
    t0 = now();
    c.kubectl(['apply', '-f', '-'], { input: list([deployment]) });
    let timer: NodeJS.Timeout | undefined;
    const readyMs = await Promise.race([
      watch.done,
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), MAX_WAIT_MS))),
    ]);
    clearTimeout(timer);
    const allReadyMs = readyMs ? now() - t0 : NaN;
    const t1 = now();
    const kubeletOps = addOps(await kubeletOpTotals(c), ops0, -1);
    c.kubectl(['delete', 'namespace', ns, '--wait=false']);
    await waitFor(
      `the pods of ${ns} gone`,
      () => (c.kubectl(['get', 'pods', '-n', ns, '-o', 'name']).trim() === '' ? true : undefined),
      600_000,
      250,
    );
    const cpu1 = cpuNow(runtimePid);
    return {
      allReadyMs,
      readyMs: readyMs ?? watch.soFar(),
      runningMs: watch.running(),
      teardownMs: now() - t1,
      cpuMs: {
        runtime: cpu1.runtime - cpu0.runtime,
        dockerd: cpu1.dockerd - cpu0.dockerd,
        machine: cpu1.machine - cpu0.machine,
      },
      kubeletOps,
    };
  } finally {
    watch.stop();
  }
}

const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
/** `12.3 s`, or `42 of 110 Ready at 300 s` for a burst that did not finish. */
const allReady = (f: BurstFigures, n: number): string =>
  Number.isFinite(f.allReadyMs) ? secs(f.allReadyMs) : `${f.readyMs.length} of ${n} Ready at ${secs(MAX_WAIT_MS)}`;

async function main(): Promise<void> {
  // a report file without its markers fails now, not after the clusters' minutes
  if (REPORT) rewriteReport(await fsp.readFile(path.resolve(REPORT), 'utf8'), '', REPORT, MARKERS);
  const bins = kubeBinaries([...CONTROL_PLANE, ...(RUNTIMES.includes('cri-dockerd') ? ['cri-dockerd'] : [])]);
  const results = new Map<string, BurstFigures[]>();
  let seq = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? RUNTIMES : [...RUNTIMES].reverse();
    for (const runtime of order) {
      const c = await startCluster({ runtime, bins, images: [BUSYBOX, PAUSE] });
      try {
        for (const n of SIZES) {
          const f = await burst(c, n, ++seq);
          process.stderr.write(
            `round ${round + 1} ${runtime} ${n} pods: all Ready ${allReady(f, n)}, ` +
              `running p50 ${secs(pct(f.runningMs, 50))} p90 ${secs(pct(f.runningMs, 90))}, ` +
              `teardown ${secs(f.teardownMs)}, CPU runtime ${secs(f.cpuMs.runtime)} dockerd ${secs(f.cpuMs.dockerd)}\n`,
          );
          const key = `${runtime} ${n}`;
          results.set(key, [...(results.get(key) ?? []), f]);
        }
      } finally {
        await c.stop();
      }
    }
  }
  // the best round is the one all Ready soonest; a round that never got there counts last
  const readyOrLast = (f: BurstFigures): number => (Number.isFinite(f.allReadyMs) ? f.allReadyMs : Infinity);
  const bestOf = (fs: BurstFigures[]): BurstFigures | undefined =>
    [...fs].sort((a, b) => readyOrLast(a) - readyOrLast(b))[0];
  // percentiles of a burst that did not finish would flatter it: only finished bursts have them
  const p = (f: BurstFigures | undefined, q: number): string =>
    f && Number.isFinite(f.allReadyMs) ? secs(pct(f.readyMs, q)) : '-';
  const rows = SIZES.flatMap((n) =>
    RUNTIMES.map((runtime) => {
      const fs = results.get(`${runtime} ${n}`) ?? [];
      const b = bestOf(fs);
      return [
        `${n}`,
        runtime,
        b ? allReady(b, n) : '-',
        p(b, 50),
        p(b, 90),
        b && b.runningMs.length === n ? `${secs(pct(b.runningMs, 50))} / ${secs(pct(b.runningMs, 90))}` : '-',
        b ? secs(b.teardownMs) : '-',
        b ? secs(b.cpuMs.runtime) : '-',
        b ? secs(b.cpuMs.dockerd) : '-',
        b ? secs(b.cpuMs.machine) : '-',
        fs.map((f) => allReady(f, n)).join(', '),
      ];
    }),
  );
  // the kubelet's view: mean latency per operation over every round of a runtime, the slowest first
  const opsOf = (runtime: string, n: number): OpTotals =>
    (results.get(`${runtime} ${n}`) ?? []).reduce<OpTotals>((all, f) => addOps(all, f.kubeletOps, 1), new Map());
  const opRows = SIZES.flatMap((n) => {
    const byRuntime = RUNTIMES.map((r) => opsOf(r, n));
    const names = [...new Set(byRuntime.flatMap((o) => [...o.keys()]))];
    const meanS = (o: OpTotals, op: string): number => {
      const t = o.get(op);
      return t ? t.seconds / t.count : NaN;
    };
    names.sort(
      (a, b) =>
        Math.max(...byRuntime.map((o) => meanS(o, b) || 0)) - Math.max(...byRuntime.map((o) => meanS(o, a) || 0)),
    );
    return names.map((op) => [
      `${n}`,
      op,
      ...byRuntime.map((o) => {
        const t = o.get(op);
        return t ? `${(1000 * meanS(o, op)).toFixed(0)} ms (${t.count})` : '-';
      }),
    ]);
  });
  const command = ['npm run bench:kubelet-burst --', ...process.argv.slice(2).filter((a) => !a.startsWith('--report'))];
  const out = [
    `Best of ${ROUNDS} alternating round${ROUNDS === 1 ? '' : 's'}, ${new Date().toISOString().slice(0, 16)}Z, \`${command.join(' ')}\`:`,
    '',
    table(
      [
        'pods',
        'runtime',
        'all Ready',
        'p50',
        'p90',
        'running p50 / p90',
        'teardown',
        'CPU: runtime',
        'CPU: dockerd',
        'CPU: machine',
        'all Ready, each round',
      ],
      rows,
    ),
    '',
    `The kubelet's mean latency per CRI call, creation to all Ready, over all ${ROUNDS} round${ROUNDS === 1 ? '' : 's'} (calls):`,
    '',
    table(['pods', 'kubelet operation', ...RUNTIMES], opRows),
  ].join('\n');
  process.stdout.write(out + '\n');
  if (REPORT) {
    const file = path.resolve(REPORT);
    const existing = await fsp.readFile(file, 'utf8');
    await fsp.writeFile(file, rewriteReport(existing, `${MARKERS.begin}\n\n${out}\n\n${MARKERS.end}`, REPORT, MARKERS));
  }
}

main().catch((err: Error) => {
  process.stderr.write(`kubelet-burst failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
