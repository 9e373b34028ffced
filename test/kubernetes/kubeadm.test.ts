/**
 * `kubeadm init` with crishim as the CRI socket brings a control plane up as static pods on
 * crishim, and `kubeadm reset` takes it down again, leaving no container behind. kubeadm writes
 * /etc/kubernetes, /var/lib/kubelet and /var/lib/etcd: the test refuses to run where they are in
 * use. There is no systemd here, so the test starts the kubelet the way kubeadm's unit would.
 *
 * Advertise address: given 127.0.0.1, kubeadm advertises the first global address on `lo`
 * instead (its rule for hosts whose interfaces carry only link-local addresses). The test puts
 * ADVERTISE on `lo` for its run, so every control-plane connection stays on the loopback device.
 */
import { execFileSync, spawn, type ChildProcess } from 'child_process';
import { existsSync, promises as fsp, readdirSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { docker } from '../e2e/harness';
import { kubeBinaries, type KubeBinaries } from './binaries';
import { refuseBesideForeignPods, waitFor } from './cluster';
import { exited, spawnDaemon, type Daemon } from './processes';
import { startRuntime, type Runtime } from './runtimes';

jest.setTimeout(900_000);

const ADMIN = '/etc/kubernetes/admin.conf';
const ADVERTISE = '10.99.0.1';
/** A node name /etc/hosts resolves: kubeadm's Hostname check looks it up, and DNS is off-limits. */
const NODE = 'localhost';
const CONTROL_PLANE_PODS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

let bins: KubeBinaries;
let dir: string;
let rt: Runtime;
let kubelet: Daemon | undefined;
let addedAdvertise = false;
/** kubeadm init ran: a test that fails after it must still reset, or the control plane stays up. */
let initRan = false;
/** crictl, which kubeadm drives the runtime with (1.26 and 1.28 do), comes from the same folder. */
const kubeadmEnv = (): NodeJS.ProcessEnv => ({ ...process.env, PATH: `${bins.dir}:${process.env.PATH ?? ''}` });

const ip = (args: string[]): string => execFileSync('ip', args, { encoding: 'utf8' });

/**
 * The control plane kubeadm is asked for: its own version, as `kubeadm version -o short` prints it.
 * test/kubernetes/images.sh tags the control-plane images from the same tree's binaries with it, and
 * a kubeadm refuses a control plane more than one minor version older than itself.
 */
const kubeadmVersion = (): string =>
  execFileSync(bins.path('kubeadm'), ['version', '-o', 'short'], { encoding: 'utf8' }).trim();

function initConfig(socket: string, node: string, version: string): string {
  return [
    {
      apiVersion: 'kubeadm.k8s.io/v1beta3',
      kind: 'InitConfiguration',
      localAPIEndpoint: { advertiseAddress: '127.0.0.1', bindPort: 6443 },
      nodeRegistration: {
        criSocket: socket,
        name: node,
        // the kubelet would otherwise take the default route's address as the node's
        kubeletExtraArgs: { 'node-ip': ADVERTISE },
        // every image is in Docker already; preflight would otherwise pull CoreDNS's and kube-proxy's
        // from registry.k8s.io, which this machine may not reach
        imagePullPolicy: 'Never',
      },
    },
    {
      apiVersion: 'kubeadm.k8s.io/v1beta3',
      kind: 'ClusterConfiguration',
      kubernetesVersion: version,
      networking: { serviceSubnet: '10.96.0.0/16' },
    },
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: '127.0.0.1',
      cgroupDriver: 'cgroupfs',
      failSwapOn: false,
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    },
  ]
    .map((o) => JSON.stringify(o))
    .join('\n---\n');
}

/** What kubeadm's systemd drop-in runs: its files, and the flags it wrote to kubeadm-flags.env. */
async function startKubelet(kubeadm: ChildProcess, output: () => string): Promise<Daemon> {
  await waitFor('kubeadm to write the kubelet configuration', () => {
    if (kubeadm.exitCode !== null) throw new Error(`kubeadm init exited ${kubeadm.exitCode}:\n${output()}`);
    return existsSync('/var/lib/kubelet/kubeadm-flags.env') && existsSync('/var/lib/kubelet/config.yaml')
      ? true
      : undefined;
  });
  const env = await fsp.readFile('/var/lib/kubelet/kubeadm-flags.env', 'utf8');
  const flags = /KUBELET_KUBEADM_ARGS="([^"]*)"/.exec(env)?.[1].split(/\s+/).filter(Boolean) ?? [];
  return spawnDaemon(
    'kubelet',
    bins.path('kubelet'),
    [
      '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
      '--kubeconfig=/etc/kubernetes/kubelet.conf',
      '--config=/var/lib/kubelet/config.yaml',
      ...flags,
    ],
    path.join(dir, 'kubelet.log'),
  );
}

function run(cmd: ChildProcess): { output: () => string; done: Promise<{ code: number | null; output: string }> } {
  let output = '';
  cmd.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  cmd.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  return { output: () => output, done: exited(cmd).then(() => ({ code: cmd.exitCode, output })) };
}

const kubectl = (args: string[]): string =>
  execFileSync(bins.path('kubectl'), ['--kubeconfig', ADMIN, ...args], { encoding: 'utf8', timeout: 60_000 });

async function ownContainers(): Promise<string[]> {
  const all = await docker.listContainers({
    all: true,
    filters: { label: [`io.crishim.root=${dir}/runtime/crishim-root`] },
  });
  return all.map((c) => c.Names[0] ?? c.Id);
}

beforeAll(async () => {
  bins = kubeBinaries(['kubeadm', 'kubelet', 'kubectl', 'crictl']);
  await refuseBesideForeignPods('crishim');
  for (const d of ['/etc/kubernetes/manifests', '/var/lib/etcd'])
    if (existsSync(d) && readdirSync(d).length > 0)
      throw new Error(`${d} is in use: this host already runs a kubeadm control plane`);
  if (!ip(['-o', 'addr', 'show', 'dev', 'lo']).includes(` ${ADVERTISE}/`)) {
    ip(['addr', 'add', `${ADVERTISE}/32`, 'dev', 'lo']);
    addedAdvertise = true;
  }
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'kubeadm-crishim-'));
  rt = await startRuntime('crishim', path.join(dir, 'runtime'));
}, 120_000);

afterAll(async () => {
  await kubelet?.stop();
  if (initRan && existsSync('/etc/kubernetes/manifests/kube-apiserver.yaml')) {
    try {
      execFileSync(bins.path('kubeadm'), ['reset', '-f', `--cri-socket=${rt.endpoint}`], {
        env: kubeadmEnv(),
        stdio: 'ignore',
        timeout: 180_000,
      });
    } catch (err) {
      console.warn(`kubeadm reset after a failed test failed: ${String(err)}`);
    }
  }
  await rt?.stop();
  execFileSync('sh', ['-c', `ip link del ${rt.cni.bridge} 2>/dev/null || true`]);
  if (addedAdvertise) ip(['addr', 'del', `${ADVERTISE}/32`, 'dev', 'lo']);
  await fsp.rm(dir, { recursive: true, force: true });
});

it('kubeadm init brings the control plane up as static pods on crishim; kubeadm reset removes them', async () => {
  const cfg = path.join(dir, 'kubeadm.yaml');
  await fsp.writeFile(cfg, initConfig(rt.endpoint, NODE, kubeadmVersion()));
  const env = kubeadmEnv();
  initRan = true;
  const init = spawn(
    bins.path('kubeadm'),
    [
      'init',
      `--config=${cfg}`,
      '--skip-phases=addon/coredns,addon/kube-proxy',
      // the one check this VM fails: a host tool kube-proxy uses, nothing of the runtime's
      '--ignore-preflight-errors=FileExisting-conntrack',
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const running = run(init);
  kubelet = await startKubelet(init, running.output);
  const { code, output } = await running.done;
  expect({ code, tail: output.slice(-2000) }).toMatchObject({ code: 0 });
  expect(output).toContain('Your Kubernetes control-plane has initialized successfully');

  const pods = await waitFor('the control-plane pods running and ready', () => {
    const list = JSON.parse(kubectl(['get', 'pods', '-n', 'kube-system', '-o', 'json'])) as {
      items: Array<{ metadata: { name: string }; status: { conditions?: Array<{ type: string; status: string }> } }>;
    };
    const ready = list.items.filter((p) => p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    return CONTROL_PLANE_PODS.every((n) => ready.some((p) => p.metadata.name === `${n}-${NODE}`)) ? ready : undefined;
  });
  expect(pods.length).toBeGreaterThanOrEqual(4);
  const node = kubectl(['get', 'node', NODE, '-o', 'jsonpath={.status.nodeInfo.containerRuntimeVersion}']);
  expect(node).toMatch(/^docker:\/\//);
  // Ready needs the runtime's network status too: crishim's CNI config is in place
  await waitFor('the node Ready', () =>
    kubectl(['get', 'node', NODE, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']) === 'True'
      ? true
      : undefined,
  );
  const names = await ownContainers();
  for (const n of CONTROL_PLANE_PODS)
    expect(names.some((c) => c.startsWith(`/k8s_${n}_${n}-${NODE}_kube-system_`))).toBe(true);

  // kubeadm's unit would be stopped by reset through systemd; there is none here
  await kubelet.stop();
  const reset = await run(
    spawn(bins.path('kubeadm'), ['reset', '-f', `--cri-socket=${rt.endpoint}`], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ).done;
  expect({ code: reset.code, tail: reset.output.slice(-2000) }).toMatchObject({ code: 0 });
  expect(await ownContainers()).toEqual([]);
  expect(existsSync('/etc/kubernetes/manifests/kube-apiserver.yaml')).toBe(false);
});
