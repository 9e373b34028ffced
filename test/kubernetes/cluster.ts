/**
 * A single-node Kubernetes cluster on this machine, its kubelet on crishim (or on containerd as the
 * reference): Debian's etcd, kube-apiserver (token auth, AlwaysAllow), kube-controller-manager
 * (no node IPAM: the CNI config allocates), kube-scheduler and the kubelet, all on 127.0.0.1.
 */
import { execFileSync } from 'child_process';
import { generateKeyPairSync } from 'crypto';
import * as https from 'https';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { docker } from '../e2e/harness';
import { executable, type KubeBinaries } from './binaries';
import { envFlags, freePort, listening, spawnDaemon, waitReady, type Daemon } from './processes';
import { importImages, onDocker, startRuntime, type Runtime, type RuntimeKind } from './runtimes';

export interface ClusterOptions {
  runtime: RuntimeKind;
  bins: KubeBinaries;
  /** Images to make available to the runtime (containerd has its own store). */
  images?: string[];
  featureGates?: Record<string, boolean>;
  /** Plain-HTTP registries on 127.0.0.1 the runtime may pull from. */
  registries?: string[];
}

export interface Cluster {
  dir: string;
  node: string;
  kubeconfig: string;
  bins: KubeBinaries;
  runtime: Runtime;
  kubelet: Daemon;
  kubectl(args: string[], opts?: { input?: string; timeoutMs?: number }): string;
  json<T>(args: string[]): T;
  /**
   * GET on the kubelet's own port (anonymous, AlwaysAllow): the API server's node proxy refuses
   * the loopback address this node has.
   */
  kubeletGet(urlPath: string): Promise<string>;
  /** Stops the kubelet's pods first (so nothing is left in Docker), then every daemon, and removes its files. */
  stop(): Promise<void>;
}

export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 120_000,
  intervalMs = 1000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function kubeconfig(server: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    `clusters: [{name: local, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]`,
    `users: [{name: admin, user: {token: "${token}"}}]`,
    'contexts: [{name: local, context: {cluster: local, user: admin}}]',
    'current-context: local',
    '',
  ].join('\n');
}

function kubeletConfig(port: number, healthzPort: number, resolvConf: string, gates: Record<string, boolean>): string {
  return JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: '127.0.0.1',
    port,
    healthzBindAddress: '127.0.0.1',
    healthzPort,
    readOnlyPort: 0,
    cgroupDriver: 'cgroupfs',
    failSwapOn: false,
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    // 1.27's defaults: at 1.26's 5 QPS the kubelet's own API throttle dominates pod start
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    // the test images are built here and cannot be pulled again: never collect them
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    resolvConf,
    featureGates: gates,
  });
}

/**
 * Pods the kubelet did not remove (it died, or time ran out) go through the runtime, so their
 * network is released too: crictl stops and removes every pod sandbox it lists.
 */
function removeLeftPods(bins: KubeBinaries, runtime: Runtime): void {
  const crictl = bins.path('crictl');
  if (!runtime.daemon.alive()) return;
  try {
    execFileSync(crictl, ['--runtime-endpoint', runtime.endpoint, 'rmp', '--all', '--force'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 120_000,
    });
  } catch (err) {
    // the message holds crictl's whole stderr, a line per pod: the last lines say why
    const [command, ...stderr] = (err as Error).message.trim().split('\n');
    console.warn(`removing the pods left on ${runtime.kind} failed: ${[command, ...stderr.slice(-2)].join('\n')}`);
  }
}

/** Unmounts what the kubelet left mounted under `dir` (secret and projected volumes are tmpfs). */
function unmountUnder(dir: string): void {
  const mounts = execFileSync('sh', ['-c', "awk '{print $2}' /proc/self/mounts"], { encoding: 'utf8' })
    .split('\n')
    .filter((m) => m.startsWith(dir + '/'))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) execFileSync('umount', ['-l', m], { stdio: 'ignore' });
}

/**
 * A kubelet kills every running pod its runtime lists that it does not own: on crishim and on
 * cri-dockerd that is every pod on the Docker engine. Refuse to start beside another runtime's pods there.
 */
export async function refuseBesideForeignPods(kind: RuntimeKind): Promise<void> {
  if (!onDocker(kind)) return;
  const sandboxes = await docker.listContainers({ filters: { label: ['io.kubernetes.docker.type=podsandbox'] } });
  if (sandboxes.length > 0)
    throw new Error(
      `Docker runs ${sandboxes.length} pod sandboxes already (${sandboxes
        .slice(0, 3)
        .map((s) => s.Names[0])
        .join(', ')}...): the kubelet would kill them; stop what runs them first`,
    );
}

const ETCD = '/usr/bin/etcd';

/** The daemons' logs of the last cluster on each runtime, kept for reading after the run. */
export const LOG_DIR = path.join(os.tmpdir(), 'crishim-kubernetes-logs');

async function keepLogs(dir: string, runtime: RuntimeKind): Promise<void> {
  const to = path.join(LOG_DIR, runtime);
  await fsp.rm(to, { recursive: true, force: true });
  await fsp.mkdir(to, { recursive: true });
  for (const d of [dir, path.join(dir, 'runtime')])
    for (const f of await fsp.readdir(d).catch(() => [] as string[]))
      if (f.endsWith('.log')) await fsp.copyFile(path.join(d, f), path.join(to, f));
}

export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  await refuseBesideForeignPods(opts.runtime);
  if (!executable(ETCD)) throw new Error(`${ETCD} is missing: apt-get install etcd-server`);
  // the kubelet leaves the containers of deleted pods for its garbage collector, which rarely runs
  // before the cluster stops: without crictl to remove them, every later cluster on this dockerd
  // (the next round of a bench) runs beside them and lists them all
  if (!executable(opts.bins.path('crictl')))
    throw new Error(`KUBE_BIN_DIR=${opts.bins.dir} lacks crictl, which removes the pods a cluster leaves`);
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `k8s-${opts.runtime}-`));
  const daemons: Daemon[] = [];
  const bin = opts.bins.path;
  // the kubelet refuses a loopback --node-ip, and every other address here is off limits to tests:
  // the node is named localhost and the API server reaches the kubelet by that name
  const node = 'localhost';
  const token = `t${Math.random().toString(36).slice(2)}`;
  const [etcdPort, peerPort, apiPort, kubeletPort, healthzPort] = await Promise.all(
    Array.from({ length: 5 }, () => freePort()),
  );
  const kc = path.join(dir, 'kubeconfig');
  await fsp.writeFile(kc, kubeconfig(`https://127.0.0.1:${apiPort}`, token));
  const kubectl: Cluster['kubectl'] = (args, o = {}) =>
    execFileSync(bin('kubectl'), ['--kubeconfig', kc, ...args], {
      encoding: 'utf8',
      input: o.input,
      timeout: o.timeoutMs ?? 60_000,
      stdio: ['pipe', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
    });
  const start = (name: string, cmd: string, args: string[]): Daemon => {
    const d = spawnDaemon(name, cmd, args, path.join(dir, `${name}.log`));
    daemons.push(d);
    return d;
  };

  const etcd = start('etcd', ETCD, [
    '--name=default',
    `--data-dir=${dir}/etcd`,
    `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
    `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=default=http://127.0.0.1:${peerPort}`,
  ]);
  await waitReady(etcd, () => listening(etcdPort));

  const sa = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  await fsp.writeFile(path.join(dir, 'sa.key'), sa.privateKey, { mode: 0o600 });
  await fsp.writeFile(path.join(dir, 'sa.pub'), sa.publicKey);
  await fsp.writeFile(path.join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`);
  const certDir = path.join(dir, 'pki');
  const api = start('kube-apiserver', bin('kube-apiserver'), [
    `--etcd-servers=http://127.0.0.1:${etcdPort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--cert-dir=${certDir}`,
    `--token-auth-file=${dir}/tokens.csv`,
    '--authorization-mode=AlwaysAllow',
    '--allow-privileged=true',
    '--service-cluster-ip-range=10.96.0.0/16',
    '--kubelet-preferred-address-types=Hostname',
    '--service-account-issuer=https://kubernetes.default.svc',
    `--service-account-key-file=${dir}/sa.pub`,
    `--service-account-signing-key-file=${dir}/sa.key`,
  ]);
  await waitReady(api, async () => kubectl(['get', '--raw', '/readyz']).trim() === 'ok', 90_000);
  start('kube-controller-manager', bin('kube-controller-manager'), [
    `--kubeconfig=${kc}`,
    '--controllers=*,-nodeipam',
    `--service-account-private-key-file=${dir}/sa.key`,
    `--root-ca-file=${certDir}/apiserver.crt`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=0',
  ]);
  start('kube-scheduler', bin('kube-scheduler'), [
    `--kubeconfig=${kc}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    '--secure-port=0',
  ]);

  const criDockerd = opts.runtime === 'cri-dockerd' ? opts.bins.path('cri-dockerd') : undefined;
  if (criDockerd && !executable(criDockerd))
    throw new Error(`${criDockerd} is missing: build cri-dockerd into KUBE_BIN_DIR`);
  const runtime = await startRuntime(opts.runtime, path.join(dir, 'runtime'), opts.registries, criDockerd);
  importImages(runtime, opts.images ?? []);
  // pods resolve names against the node's loopback: no query leaves this machine
  const resolvConf = path.join(dir, 'resolv.conf');
  await fsp.writeFile(resolvConf, 'nameserver 127.0.0.1\n');
  await fsp.writeFile(
    path.join(dir, 'kubelet.json'),
    kubeletConfig(kubeletPort, healthzPort, resolvConf, opts.featureGates ?? {}),
  );
  const kubelet = start('kubelet', bin('kubelet'), [
    `--config=${dir}/kubelet.json`,
    `--kubeconfig=${kc}`,
    `--container-runtime-endpoint=${runtime.endpoint}`,
    `--root-dir=${dir}/kubelet`,
    `--hostname-override=${node}`,
    '--v=2',
    // e.g. '--v=3' to log each probe's outcome; a later flag wins
    ...envFlags('CRISHIM_BENCH_KUBELET_FLAGS'),
  ]);
  const ready = async (): Promise<boolean> => {
    const n = JSON.parse(kubectl(['get', 'node', node, '-o', 'json'])) as {
      status: { conditions: Array<{ type: string; status: string }> };
    };
    return n.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
  };
  await waitReady(kubelet, ready, 120_000);
  await waitFor('the default service account', () => kubectl(['get', 'serviceaccount', 'default', '-o', 'name']));

  const cluster: Cluster = {
    dir,
    node,
    kubeconfig: kc,
    bins: opts.bins,
    runtime,
    kubelet,
    kubectl,
    json: <T>(args: string[]) => JSON.parse(kubectl([...args, '-o', 'json'])) as T,
    kubeletGet: (urlPath) =>
      new Promise((resolve, reject) => {
        https
          .get({ host: '127.0.0.1', port: kubeletPort, path: urlPath, rejectUnauthorized: false }, (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () =>
              res.statusCode === 200 ? resolve(body) : reject(new Error(`${urlPath}: ${res.statusCode} ${body}`)),
            );
          })
          .on('error', reject);
      }),
    async stop() {
      try {
        if (kubelet.alive() && runtime.daemon.alive()) {
          kubectl(['delete', 'namespaces', '-l', 'crishim-test=true', '--wait=false'], { timeoutMs: 30_000 });
          kubectl(['delete', 'pods', '--all', '--all-namespaces', '--grace-period=1', '--wait=false']);
          await waitFor(
            'the node to run no pod',
            () =>
              kubectl(['get', 'pods', '-A', '--field-selector', `spec.nodeName=${node}`, '-o', 'name']).trim() === '',
            180_000,
            2000,
          ).catch((err: Error) => console.warn(err.message));
        }
      } finally {
        await kubelet.stop();
        removeLeftPods(opts.bins, runtime);
        for (const d of [runtime.daemon, ...daemons.slice().reverse()]) await d.stop();
        await runtime.stop();
        execFileSync('sh', ['-c', `ip link del ${runtime.cni.bridge} 2>/dev/null || true`]);
        unmountUnder(dir);
        await keepLogs(dir, opts.runtime);
        await fsp.rm(dir, { recursive: true, force: true });
      }
    },
  };
  return cluster;
}

/** Docker containers made by the crishim of this cluster (its root directory is under the cluster's). */
export async function crishimContainers(c: Cluster): Promise<Array<{ id: string; state: string; name: string }>> {
  const all = await docker.listContainers({ all: true, filters: { label: ['io.crishim.root'] } });
  return all
    .filter((x) => x.Labels['io.crishim.root'].startsWith(c.dir))
    .map((x) => ({ id: x.Id, state: x.State, name: x.Names[0] ?? '' }));
}
