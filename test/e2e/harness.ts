/**
 * End-to-end harness: runs the built daemon (dist/main.js) as a child process on
 * a temporary socket and state directory, and talks CRI to it over gRPC like the
 * kubelet does. Needs root, a running dockerd and the images from scripts/build-images.sh.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { promises as fsp, createWriteStream, existsSync } from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import Docker from 'dockerode';
import { loadCriProto } from '../support/cri-proto';
import type { RuntimeServiceClient } from '../../src/generated/runtime/v1/RuntimeService';
import type { ImageServiceClient } from '../../src/generated/runtime/v1/ImageService';

/** The checkout: two levels up from this file, or further when compiled elsewhere (bench/dist/test/e2e). */
export const REPO = ((): string => {
  for (let dir = path.resolve(__dirname, '..', '..'); dir !== path.dirname(dir); dir = path.dirname(dir))
    if (existsSync(path.join(dir, 'cni', '10-crishim.conflist'))) return dir;
  return path.resolve(__dirname, '..', '..');
})();
export const docker = new Docker();
export const BUSYBOX = 'crishim-test/busybox:latest';

export interface CniSetup {
  /** Bridge and subnet private to one test file, so files never share IP state. */
  bridge: string;
  subnet: string;
  /** host-local's reservation directory. */
  ipamDir: string;
}

export interface Crishim {
  dir: string;
  socket: string;
  rootDir: string;
  cniConfDir: string;
  cniCacheDir: string;
  cni: CniSetup;
  logFile: string;
  runtime: RuntimeServiceClient;
  image: ImageServiceClient;
  proc: ChildProcess;
  /** Stops the daemon (SIGTERM, or SIGKILL with `kill`) and starts it again on the same state, optionally with another environment. */
  restart(opts?: { kill?: boolean; env?: NodeJS.ProcessEnv }): Promise<void>;
  /** Starts the daemon again after it exited by itself. */
  relaunch(env?: NodeJS.ProcessEnv): Promise<void>;
  stop(opts?: { kill?: boolean }): Promise<void>;
}

/** The shipped CNI config, pointed at a per-test bridge, subnet and reservation dir. */
export async function writeCniConfig(confDir: string, cni: CniSetup, fileName = '10-crishim.conflist'): Promise<void> {
  const shipped = JSON.parse(await fsp.readFile(path.join(REPO, 'cni', '10-crishim.conflist'), 'utf8'));
  for (const p of shipped.plugins) {
    if (p.type === 'bridge') {
      p.bridge = cni.bridge;
      p.ipam.ranges = [[{ subnet: cni.subnet }]];
      p.ipam.dataDir = cni.ipamDir;
      delete p.ipam.subnet;
    }
  }
  shipped.name = `crishim-${cni.bridge}`;
  await fsp.mkdir(confDir, { recursive: true });
  await fsp.writeFile(path.join(confDir, fileName), JSON.stringify(shipped, null, 2));
}

function waitForExit(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
  });
}

export interface StartOptions {
  /** Extra CLI flags. */
  args?: string[];
  /** Third octet of 10.88.X.0/24, unique per test file. */
  subnetIndex: number;
  /** Write no CNI config (for NetworkReady tests). */
  noCniConfig?: boolean;
  /** Extra environment for the daemon (jest's process.env is not what spawn passes on by default). */
  env?: NodeJS.ProcessEnv;
  /** Runs this executable (the packaged crishim) instead of `node dist/main.js`. */
  executable?: string;
  /** The daemon's whole environment, instead of jest's plus `env` (`{}` is `env -i`). */
  exactEnv?: NodeJS.ProcessEnv;
}

export async function startCrishim(opts: StartOptions): Promise<Crishim> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-e2e-'));
  const cni: CniSetup = {
    bridge: `crit${opts.subnetIndex}`,
    subnet: `10.88.${opts.subnetIndex}.0/24`,
    ipamDir: path.join(dir, 'ipam'),
  };
  const socket = path.join(dir, 'crishim.sock');
  const rootDir = path.join(dir, 'root');
  const cniConfDir = path.join(dir, 'net.d');
  const cniCacheDir = path.join(dir, 'cni-cache');
  const logFile = path.join(dir, 'crishim.log');
  await fsp.mkdir(cniConfDir, { recursive: true });
  if (!opts.noCniConfig) await writeCniConfig(cniConfDir, cni);

  const proto = loadCriProto();
  const target = `unix://${socket}`;
  // grpc-js retries a refused connection after 1 s, then 1.6x longer each time (up to 120 s): across
  // a restart that takes 10 s or more (the cgroup v2 VM emulates its CPU) the channels would still be
  // backing off well after the daemon serves. Retrying at most every second follows it closely.
  const reconnect = { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1000 };
  const runtime = new proto.runtime.v1.RuntimeService(
    target,
    grpc.credentials.createInsecure(),
    reconnect,
  ) as unknown as RuntimeServiceClient;
  const image = new proto.runtime.v1.ImageService(
    target,
    grpc.credentials.createInsecure(),
    reconnect,
  ) as unknown as ImageServiceClient;

  const args = [
    path.join(REPO, 'dist', 'main.js'),
    '--container-runtime-endpoint',
    target,
    '--root-directory',
    rootDir,
    '--cni-conf-dir',
    cniConfDir,
    '--cni-cache-dir',
    cniCacheDir,
    '--log-level',
    'debug',
    ...(opts.args ?? []),
  ];
  const log = createWriteStream(logFile, { flags: 'a' });
  let env: NodeJS.ProcessEnv = opts.exactEnv ?? { ...process.env, ...opts.env };
  const launch = async (): Promise<ChildProcess> => {
    const proc = opts.executable
      ? spawn(opts.executable, args.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], env })
      : spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    proc.stdout?.pipe(log, { end: false });
    proc.stderr?.pipe(log, { end: false });
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null)
        throw new Error(`crishim exited with ${proc.exitCode}; log: ${await fsp.readFile(logFile, 'utf8')}`);
      if (existsSync(socket)) {
        const ok = await new Promise<boolean>((resolve) =>
          runtime.Version({}, { deadline: Date.now() + 2000 }, (err) => resolve(!err)),
        );
        if (ok) return proc;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    proc.kill('SIGKILL');
    throw new Error(`crishim did not answer within 20s; log: ${await fsp.readFile(logFile, 'utf8')}`);
  };

  const h: Crishim = {
    dir,
    socket,
    rootDir,
    cniConfDir,
    cniCacheDir,
    cni,
    logFile,
    runtime,
    image,
    proc: await launch(),
    async stop(o) {
      h.proc.kill(o?.kill ? 'SIGKILL' : 'SIGTERM');
      await waitForExit(h.proc);
    },
    async restart(o) {
      await h.stop(o);
      if (o?.env) env = { ...process.env, ...o.env };
      h.proc = await launch();
    },
    async relaunch(e) {
      await waitForExit(h.proc);
      if (e) env = { ...process.env, ...e };
      h.proc = await launch();
    },
  };
  return h;
}

/** Stops the daemon, closes clients, removes the bridge it used and its temp dir. */
export async function teardown(h: Crishim | undefined): Promise<void> {
  if (!h) return;
  await h.stop();
  h.runtime.close();
  h.image.close();
  // what a test file left (a pod cleanup hook that ran after the daemon stopped, a failed test):
  // containers of this daemon's root directory only, so the next file and run start clean
  const left = await docker
    .listContainers({ all: true, filters: { label: [`io.crishim.root=${h.rootDir}`] } })
    .catch(() => []);
  await Promise.all(
    left.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  try {
    execFileSync('ip', ['link', 'del', h.cni.bridge], { stdio: 'ignore' });
  } catch {
    /* never created */
  }
  // CRISHIM_E2E_KEEP_LOGS=dir keeps each daemon's log for a post-mortem
  const keep = process.env.CRISHIM_E2E_KEEP_LOGS;
  if (keep) await fsp.copyFile(h.logFile, path.join(keep, `${path.basename(h.dir)}.log`)).catch(() => undefined);
  await fsp.rm(h.dir, { recursive: true, force: true });
}

type Callback<Res> = (err: grpc.ServiceError | null, res?: Res) => void;
/** The last overload of a generated client method, which is what `infer` sees. */
type UnaryMethod<Req, Res> = (req: Req, cb: Callback<Res>) => grpc.ClientUnaryCall;
type FullUnaryMethod = (
  req: unknown,
  meta: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: Callback<unknown>,
) => grpc.ClientUnaryCall;

/** Promise form of a unary call: `await call(h.runtime, 'Version', {})`. */
export function call<C extends grpc.Client, K extends keyof C & string>(
  client: C,
  method: K,
  req: C[K] extends UnaryMethod<infer Req, infer _Res> ? Req : never,
  timeoutMs = 120_000,
): Promise<C[K] extends UnaryMethod<infer _Req, infer Res> ? NonNullable<Res> : never> {
  return new Promise((resolve, reject) => {
    const fn = client[method] as unknown as FullUnaryMethod;
    fn.call(client, req, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, res) =>
      err ? reject(err) : resolve(res as never),
    );
  });
}

/** Rejection's gRPC code (fails the test if the call succeeded). */
export async function codeOf(p: Promise<unknown>): Promise<{ code: grpc.status; details: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as grpc.ServiceError;
    return { code: e.code, details: e.details };
  }
  throw new Error('expected the call to fail');
}

let seq = 0;
/** A sandbox config with unique metadata. */
export function podConfig(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  seq += 1;
  const uid = `${name}-${process.pid}-${Date.now()}-${seq}`;
  return {
    metadata: { name, namespace: 'crishim-e2e', uid, attempt: 0 },
    hostname: name,
    log_directory: '',
    labels: { 'crishim-e2e': 'true', test: name },
    annotations: { 'e2e/uid': uid },
    ...extra,
  };
}

/** A running pod of `runLoggedPod`: its sandbox id, uid, the config it ran with and its log directory. */
export interface LoggedPod {
  id: string;
  uid: string;
  config: Record<string, unknown>;
  logDir: string;
}

/** Runs a pod whose log directory, under the daemon's own dir, exists first (as the kubelet makes it). */
export async function runLoggedPod(h: Crishim, name: string, extra: Record<string, unknown> = {}): Promise<LoggedPod> {
  const logDir = path.join(h.dir, 'pods', `${name}-${Date.now()}`);
  await fsp.mkdir(logDir, { recursive: true });
  const config = podConfig(name, { log_directory: logDir, ...extra });
  const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
  return { id, uid: (config.metadata as { uid: string }).uid, config, logDir };
}

export function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8' });
}

/** Docker containers carrying a pod uid label: what a leak check looks for. */
export async function containersOfPod(uid: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`io.kubernetes.pod.uid=${uid}`] } });
}

/** The sandbox checkpoints (`<pod id>.json`) a daemon keeps under its root; none when the directory is gone. */
export async function checkpointFiles(d: { rootDir: string }): Promise<string[]> {
  return (await fsp.readdir(path.join(d.rootDir, 'sandbox')).catch(() => [] as string[])).filter((f) =>
    f.endsWith('.json'),
  );
}

/** host-local reservation files (one per IP) under a dataDir, any network. */
export async function reservedIps(ipamDir: string): Promise<string[]> {
  const out: string[] = [];
  for (const net of await fsp.readdir(ipamDir).catch(() => [] as string[])) {
    for (const f of await fsp.readdir(path.join(ipamDir, net)).catch(() => [] as string[])) {
      if (/^\d+\.\d+\.\d+\.\d+$/.test(f)) out.push(f);
    }
  }
  return out;
}

/** Every message of a server stream, once it ends. */
export function collect<T>(stream: grpc.ClientReadableStream<T>): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const out: T[] = [];
    stream.on('data', (m: T) => out.push(m));
    stream.on('end', () => resolve(out));
    stream.on('error', reject);
  });
}

/**
 * The daemon's log once it matches `pattern`: a line is written after the call or event that
 * caused it may already have answered, so it is waited for, not read once.
 */
export async function waitForLog(h: Crishim, pattern: RegExp, timeoutMs = 10_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const log = await fsp.readFile(h.logFile, 'utf8');
    if (pattern.test(log)) return log;
    if (Date.now() > deadline) throw new Error(`the daemon's log never matched ${pattern} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One sample of a /metrics text: the first line of `name` whose labels include `labels`; 0 when none. */
export function metricValue(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.split(' ').pop());
  }
  return 0;
}

/** The daemon's /metrics text (started with --metrics-bind-address=127.0.0.1:0; the port is read from its log). */
export async function scrapeMetrics(h: Crishim): Promise<string> {
  const log = await fsp.readFile(h.logFile, 'utf8');
  const port = /"address":"127\.0\.0\.1:(\d+)"|address="127\.0\.0\.1:(\d+)"/.exec(log);
  if (!port) throw new Error('metrics address not logged');
  return new Promise((resolve, reject) =>
    http
      .get(`http://127.0.0.1:${port[1] ?? port[2]}/metrics`, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(body));
      })
      .on('error', reject),
  );
}
