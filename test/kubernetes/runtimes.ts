/**
 * The CRI runtime a cluster's kubelet talks to: crishim from this checkout, or a reference: Debian's
 * containerd with its CRI plugin, or cri-dockerd from KUBE_BIN_DIR on the same dockerd. Each gets
 * the CNI config crishim ships, on a bridge and subnet of its own.
 */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as net from 'net';
import * as path from 'path';
import { REPO, writeCniConfig, type CniSetup } from '../e2e/harness';
import { envFlags, spawnDaemon, waitReady, type Daemon } from './processes';

export type RuntimeKind = 'crishim' | 'containerd' | 'cri-dockerd';

/** The runtimes that drive this machine's dockerd, and so list every pod on it. */
export const onDocker = (kind: RuntimeKind): boolean => kind !== 'containerd';

/** A subnet and bridge no other test or runtime on this machine uses. */
const NETWORKS: Record<RuntimeKind, { bridge: string; subnet: string }> = {
  crishim: { bridge: 'crik8s0', subnet: '10.98.0.0/16' },
  containerd: { bridge: 'ctrk8s0', subnet: '10.97.0.0/16' },
  'cri-dockerd': { bridge: 'cdk8s0', subnet: '10.95.0.0/16' },
};

export interface Runtime {
  kind: RuntimeKind;
  /** `unix:///...`, for the kubelet's --container-runtime-endpoint. */
  endpoint: string;
  cni: CniSetup;
  /** The running daemon: a new one after crashAndRestart. */
  readonly daemon: Daemon;
  /** kill -9 and start again on the same state (what a crash and a supervisor's restart do). */
  crashAndRestart(): Promise<void>;
  stop(): Promise<void>;
}

function socketAnswers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socket, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** Starts the runtime's daemon and waits for its socket; a crash restarts it on the same state. */
async function watchedRuntime(
  kind: RuntimeKind,
  dir: string,
  cni: CniSetup,
  command: (socket: string) => [string, string[]],
  afterStop: (socket: string) => void = () => undefined,
): Promise<Runtime> {
  const socket = path.join(dir, `${kind}.sock`);
  const launch = async (): Promise<Daemon> => {
    const [cmd, args] = command(socket);
    await fsp.rm(socket, { force: true });
    const d = spawnDaemon(kind, cmd, args, path.join(dir, `${kind}.log`));
    await waitReady(d, () => socketAnswers(socket), 60_000);
    return d;
  };
  let daemon = await launch();
  return {
    kind,
    endpoint: `unix://${socket}`,
    cni,
    get daemon() {
      return daemon;
    },
    async crashAndRestart() {
      await daemon.stop('SIGKILL');
      daemon = await launch();
    },
    async stop() {
      await daemon.stop();
      afterStop(socket);
    },
  };
}

/**
 * `registries`: plain-HTTP registries on 127.0.0.1 the runtime may pull from (Docker trusts
 * loopback registries by itself; containerd is told).
 */
export async function startRuntime(
  kind: RuntimeKind,
  dir: string,
  registries: string[] = [],
  criDockerd?: string,
): Promise<Runtime> {
  const cni: CniSetup = { ...NETWORKS[kind], ipamDir: path.join(dir, 'ipam') };
  const confDir = path.join(dir, 'net.d');
  await writeCniConfig(confDir, cni);
  if (kind === 'crishim') {
    return watchedRuntime(kind, dir, cni, (socket) => [
      process.execPath,
      [
        // as for `npm run bench`, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof' (NODE_OPTIONS refuses --cpu-prof)
        ...envFlags('CRISHIM_BENCH_NODE_FLAGS'),
        path.join(REPO, 'dist', 'main.js'),
        '--container-runtime-endpoint',
        `unix://${socket}`,
        '--root-directory',
        path.join(dir, 'crishim-root'),
        '--cni-conf-dir',
        confDir,
        // e.g. '--log-level debug' for each call's duration and each Docker request
        ...envFlags('CRISHIM_BENCH_DAEMON_FLAGS'),
      ],
    ]);
  }
  if (kind === 'cri-dockerd') {
    if (!criDockerd) throw new Error('cri-dockerd: no binary given (KUBE_BIN_DIR/cri-dockerd)');
    // cri-dockerd always sends its pod CIDR as ipRanges, which host-local adds to the config's own
    // ranges ("range set 0 overlaps with 1"): the subnet comes from --pod-cidr alone
    const file = path.join(confDir, '10-crishim.conflist');
    const conf = JSON.parse(await fsp.readFile(file, 'utf8')) as { plugins: Array<{ ipam?: { ranges?: unknown } }> };
    for (const p of conf.plugins) delete p.ipam?.ranges;
    await fsp.writeFile(file, JSON.stringify(conf, null, 2));
    return watchedRuntime(kind, dir, cni, (socket) => [
      criDockerd,
      [
        '--container-runtime-endpoint',
        `unix://${socket}`,
        '--cri-dockerd-root-directory',
        path.join(dir, 'cri-dockerd-root'),
        '--network-plugin=cni',
        '--cni-bin-dir=/usr/lib/cni',
        `--cni-conf-dir=${confDir}`,
        `--cni-cache-dir=${path.join(dir, 'cni-cache')}`,
        // the shipped conflist takes its range from the pod CIDR (ipRanges): without one, no network
        `--pod-cidr=${cni.subnet}`,
        '--pod-infra-container-image=registry.k8s.io/pause:3.10',
        // its streaming server listens on every address unless told
        '--streaming-bind-addr=127.0.0.1:0',
      ],
    ]);
  }
  const socket = path.join(dir, `${kind}.sock`);
  const config = path.join(dir, 'containerd.toml');
  await fsp.writeFile(
    config,
    [
      'version = 2',
      `root = "${dir}/containerd-root"`,
      `state = "${dir}/containerd-state"`,
      '[grpc]',
      `  address = "${socket}"`,
      '[plugins."io.containerd.grpc.v1.cri"]',
      '  sandbox_image = "registry.k8s.io/pause:3.10"',
      // without CAP_SYS_RESOURCE (this VM) runc cannot set a sandbox's -998 and fails every pod
      '  restrict_oom_score_adj = true',
      '  stream_server_address = "127.0.0.1"',
      '  stream_server_port = "0"',
      '  [plugins."io.containerd.grpc.v1.cri".cni]',
      '    bin_dir = "/usr/lib/cni"',
      `    conf_dir = "${confDir}"`,
      ...registries.flatMap((r) => [
        `  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."${r}"]`,
        `    endpoint = ["http://${r}"]`,
      ]),
      '',
    ].join('\n'),
  );
  return watchedRuntime(
    kind,
    dir,
    cni,
    () => ['containerd', ['--config', config]],
    // containerd's shims outlive it: stop what runs, or the kubelet's pods stay behind
    (sock) => execFileSync('sh', ['-c', `pkill -f '[c]ontainerd-shim.*-address ${sock}' || true`]),
  );
}

/**
 * Copies Docker's local images into containerd's k8s.io namespace: nothing can be pulled here,
 * and the images the tests use are built into Docker (test/kubernetes/images.sh).
 */
export function importImages(rt: Runtime, refs: string[]): void {
  if (rt.kind !== 'containerd' || refs.length === 0) return;
  const address = rt.endpoint.replace(/^unix:\/\//, '');
  execFileSync('sh', ['-c', `docker save "$@" | ctr --address ${address} -n k8s.io images import -`, 'save', ...refs], {
    stdio: ['ignore', 'ignore', 'inherit'],
    maxBuffer: 1 << 20,
  });
}
