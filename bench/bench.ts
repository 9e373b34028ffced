/**
 * crishim benchmark: every figure is measured in the same run as its raw-Docker
 * baseline and reported as a ratio, so a noisy shared machine moves both alike.
 *
 *   npm run bench            full run (minutes; 200 pods at the largest size)
 *   npm run bench -- --smoke a seconds-long run of every section (CI)
 *   npm run bench -- --only=kubelet-load   some sections (overhead, concurrent, lists, memory, kubelet-load)
 *
 * Needs root, dockerd, the CNI plugins and the images from scripts/build-images.sh. DOCKER_HOST=unix://...
 * (with DOCKERD_PIDFILE for its CPU) points it at another engine.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { promises as fsp, existsSync, readFileSync } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import Docker from 'dockerode';
import type { ProtoGrpcType } from '../src/generated/api';
import type { RuntimeServiceClient } from '../src/generated/runtime/v1/RuntimeService';
import type { ImageServiceClient } from '../src/generated/runtime/v1/ImageService';
import { kubeletLoad } from './kubelet-load';

// compiled to bench/dist/bench/bench.js
const REPO = path.resolve(__dirname, '..', '..', '..');
const SMOKE = process.argv.includes('--smoke');
/** `--only=memory,kubelet-load` runs those sections alone (each takes minutes at full size). */
const ONLY = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',');
const wanted = (section: string): boolean => !ONLY || ONLY.includes(section);
const PAUSE = 'registry.k8s.io/pause:3.10';
const BUSYBOX = 'crishim-test/busybox:latest';
const docker = new Docker();

const sizes = SMOKE ? { overhead: 5, concurrent: 4, lists: [2, 5], cycles: 20 } : { overhead: 30, concurrent: 50, lists: [10, 100, 200], cycles: 1000 };
const loadSizes = SMOKE ? { pods: 3, seconds: 5, statsEveryMs: 2000, podSyncCycleMs: 5000 } : { pods: 110, seconds: 60, statsEveryMs: 10_000, podSyncCycleMs: 60_000 };

type Row = [string, string, string, string];
const rows: Row[] = [];
const record = (what: string, crishim: string, raw: string, ratio: string): void => {
  rows.push([what, crishim, raw, ratio]);
};

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}
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
  dir: string;
  /** Docker API requests crishim made so far, counted by the proxy it talks through. */
  dockerRequests(): number;
  closeProxy(): void;
}

/** Node flags on a script's `#!/usr/bin/env -S node <flags>` line. */
function shebangFlags(script: string): string[] {
  const first = readFileSync(script, 'utf8').split('\n', 1)[0];
  const m = /^#!\S*env -S node((?: --\S+)*)\s*$/.exec(first);
  return m ? m[1].trim().split(/\s+/).filter(Boolean) : [];
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
async function dockerProxy(socketPath: string): Promise<{ count(): number; close(): void }> {
  let requests = 0;
  const REQUEST_LINE = /(?:GET|POST|PUT|DELETE|HEAD) \/\S* HTTP\/1\.[01]\r\n/g;
  const server = net.createServer((client) => {
    const upstream = net.connect(dockerSocket());
    client.on('data', (c: Buffer) => {
      requests += (c.toString('latin1').match(REQUEST_LINE) ?? []).length;
      upstream.write(c);
    });
    upstream.pipe(client);
    client.on('end', () => upstream.end());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return { count: () => requests, close: () => server.close() };
}

async function startDaemon(): Promise<Daemon> {
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
  const proxy = await dockerProxy(path.join(dir, 'docker-proxy.sock'));
  const main = path.join(REPO, 'dist', 'main.js');
  // run the daemon as its executable does: with the node flags of its #! line
  const proc = spawn(process.execPath, [
    ...shebangFlags(main),
    main,
    '--container-runtime-endpoint', `unix://${socket}`,
    '--root-directory', path.join(dir, 'root'),
    '--cni-conf-dir', confDir,
    '--docker-endpoint', `unix://${path.join(dir, 'docker-proxy.sock')}`,
    '--log-level', 'warn',
    '--log-format', 'json',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr?.on('data', (c: Buffer) => (log += c.toString()));
  const def = protoLoader.loadSync(path.join(REPO, 'proto', 'runtime', 'v1', 'api.proto'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const proto = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  const runtime = new proto.runtime.v1.RuntimeService(`unix://${socket}`, grpc.credentials.createInsecure()) as unknown as RuntimeServiceClient;
  const image = new proto.runtime.v1.ImageService(`unix://${socket}`, grpc.credentials.createInsecure()) as unknown as ImageServiceClient;
  for (let i = 0; i < 200 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 50));
  if (!existsSync(socket)) throw new Error(`crishim did not start; log: ${log}`);
  return { proc, runtime, image, dir, dockerRequests: proxy.count, closeProxy: proxy.close };
}

function rpc<T>(d: Daemon, method: string, req: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (d.runtime as unknown as Record<string, (r: unknown, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: Error | null, res: T) => void) => void>)[method];
    fn.call(d.runtime, req, new grpc.Metadata(), { deadline: Date.now() + 300_000 }, (e, res) => (e ? reject(e) : resolve(res)));
  });
}

let podSeq = 0;
function pod(hostNetwork: boolean): Record<string, unknown> {
  podSeq++;
  return {
    metadata: { name: `bench-${podSeq}`, namespace: 'crishim-bench', uid: `bench-${process.pid}-${podSeq}`, attempt: 0 },
    labels: { 'crishim-bench': 'true' },
    linux: hostNetwork ? { security_context: { namespace_options: { network: 'NODE' } } } : {},
  };
}

/** RunPodSandbox + CreateContainer + StartContainer of a sleeping busybox, as a kubelet starts a pod; `onSandbox` sees the id first. */
async function runPodWithApp(d: Daemon, hostNetwork: boolean, onSandbox: (id: string) => void = () => undefined): Promise<string> {
  const config = pod(hostNetwork);
  const { pod_sandbox_id: id } = await rpc<{ pod_sandbox_id: string }>(d, 'RunPodSandbox', { config });
  onSandbox(id);
  const { container_id: c } = await rpc<{ container_id: string }>(d, 'CreateContainer', {
    pod_sandbox_id: id,
    config: { metadata: { name: 'app', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
    sandbox_config: config,
  });
  await rpc(d, 'StartContainer', { container_id: c });
  return id;
}

async function removePod(d: Daemon, id: string): Promise<void> {
  await rpc(d, 'StopPodSandbox', { pod_sandbox_id: id });
  await rpc(d, 'RemovePodSandbox', { pod_sandbox_id: id });
}

async function overhead(d: Daemon): Promise<void> {
  const raw: number[] = [];
  const viaCri: number[] = [];
  const viaCni: number[] = [];
  const rawOnce = async (): Promise<void> => {
    const [t, c] = await timed(async () => {
      const c = await docker.createContainer({ Image: PAUSE, HostConfig: { NetworkMode: 'host', IpcMode: 'shareable' }, Labels: { 'crishim-bench': 'raw' } });
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
  record('RunPodSandbox p50, host network vs raw create+start', ms(pct(viaCri, 50)), ms(pct(raw, 50)), (pct(viaCri, 50) / pct(raw, 50)).toFixed(2));
  record('RunPodSandbox p50 with CNI (bridge+portmap)', ms(pct(viaCni, 50)), ms(pct(raw, 50)), (pct(viaCni, 50) / pct(raw, 50)).toFixed(2));
}

async function concurrent(d: Daemon): Promise<void> {
  const lat: number[] = [];
  let failures = 0;
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: sizes.concurrent }, async () => {
      try {
        // the id is recorded as soon as the sandbox exists, so a later failure still gets cleaned up
        const [t] = await timed(() => runPodWithApp(d, false, (id) => ids.push(id)));
        lat.push(t);
      } catch {
        failures++;
      }
    }),
  );
  await Promise.all(ids.map((id) => removePod(d, id).catch(() => failures++)));
  const leaks = await leftovers(d);
  record(`${sizes.concurrent} concurrent pods (run+create+start) p50 / p95`, `${ms(pct(lat, 50))} / ${ms(pct(lat, 95))}`, '-', `${failures} failures, ${leaks} leaks`);
}

/** What a torn-down bench pod may not leave: containers (pause or app), checkpoints, CNI cache entries, IP reservations. */
async function leftovers(d: Daemon): Promise<number> {
  const containers = await docker.listContainers({ all: true, filters: { label: ['io.kubernetes.pod.namespace=crishim-bench'] } });
  const files = async (dir: string, keep: (f: string) => boolean): Promise<number> =>
    (await fsp.readdir(dir).catch(() => [] as string[])).filter(keep).length;
  const checkpoints = await files(path.join(d.dir, 'root', 'sandbox'), (f) => f.endsWith('.json'));
  const cniCache = await files(path.join(d.dir, 'root', 'cni-cache'), () => true);
  // host-local keeps one file per reserved IP, beside its lock and last_reserved_ip.* bookkeeping
  const ips = await files(path.join(d.dir, 'ipam', 'crishim-bench'), (f) => f !== 'lock' && !f.startsWith('last_reserved_ip'));
  return containers.length + checkpoints + cniCache + ips;
}

async function lists(d: Daemon): Promise<void> {
  const ids: string[] = [];
  for (const n of sizes.lists) {
    while (ids.length < n) ids.push(await runPodWithApp(d, true));
    // the baseline is the very Docker query the RPC makes, issued directly
    const rawFor = async (type: string): Promise<number[]> => {
      const ts: number[] = [];
      for (let i = 0; i < 5; i++) ts.push((await timed(() => docker.listContainers({ all: true, filters: { label: [`io.kubernetes.docker.type=${type}`] } })))[0]);
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
      else record(`${method} at ${n} pods (docker calls per RPC: ${steady}; first call: ${calls[0]})`, ms(pct(ts, 50)), ms(pct(rawT, 50)), (pct(ts, 50) / pct(rawT, 50)).toFixed(2));
    }
  }
  await Promise.all(ids.map((id) => removePod(d, id)));
}

function rssKiB(pid: number): number {
  const status = execFileSync('cat', [`/proc/${pid}/status`], { encoding: 'utf8' });
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
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
  const idle = rssKiB(d.proc.pid ?? 0);
  // sampled along the way: a leak keeps climbing, heap warm-up levels off
  const samples: number[] = [];
  for (let i = 1; i <= sizes.cycles; i++) {
    await cycle();
    if (i % Math.max(1, Math.floor(sizes.cycles / 4)) === 0) samples.push(rssKiB(d.proc.pid ?? 0));
  }
  const after = samples[samples.length - 1] ?? idle;
  const mib = (k: number): string => (k / 1024).toFixed(1);
  record(
    `daemon RSS idle / after ${sizes.cycles} create+remove cycles (quarters: ${samples.map(mib).join(', ')} MiB)`,
    `${mib(idle)} MiB / ${mib(after)} MiB`,
    '-',
    (after / idle).toFixed(2),
  );
  await removePod(d, id);
}

async function main(): Promise<void> {
  const d = await startDaemon();
  try {
    if (wanted('overhead')) await overhead(d);
    if (wanted('concurrent')) await concurrent(d);
    if (wanted('lists')) await lists(d);
    if (wanted('memory')) await memory(d);
    if (wanted('kubelet-load')) await kubeletLoad(
      {
        pid: d.proc.pid ?? 0,
        call: (method, req) => rpc(d, method, req),
        imageFsInfo: () => new Promise((resolve, reject) => d.image.ImageFsInfo({}, (e, r) => (e ? reject(e) : resolve(r)))),
        runPod: () => runPodWithApp(d, false),
        removePod: (id) => removePod(d, id),
        dockerRequests: d.dockerRequests,
      },
      docker,
      loadSizes,
      record,
    );
  } finally {
    d.proc.kill('SIGTERM');
    d.runtime.close();
    d.image.close();
    d.closeProxy();
    try {
      execFileSync('ip', ['link', 'del', 'crishimbench0'], { stdio: 'ignore' });
    } catch {
      /* never created */
    }
    await fsp.rm(d.dir, { recursive: true, force: true });
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const header: Row = ['measure', 'crishim', 'raw Docker', 'ratio / result'];
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i].length)));
  const line = (r: Row): string => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  process.stdout.write(`crishim bench${SMOKE ? ' (smoke)' : ''} on ${os.cpus().length} x ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Docker ${(await docker.version()).Version}, ${new Date().toISOString()}\n`);
  process.stdout.write([line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n') + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
