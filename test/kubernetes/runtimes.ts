/**
 * The CRI runtime a cluster's kubelet talks to: crishim from this checkout, or Debian's containerd
 * with its CRI plugin as the reference (the same CNI config crishim ships, on a bridge of its own).
 */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as net from 'net';
import * as path from 'path';
import { REPO, writeCniConfig, type CniSetup } from '../e2e/harness';
import { spawnDaemon, waitReady, type Daemon } from './processes';

export type RuntimeKind = 'crishim' | 'containerd';

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

async function startWatched(
  dir: string,
  name: string,
  socket: string,
  command: () => [string, string[]],
): Promise<{ daemon: Daemon; crashAndRestart(): Promise<void> }> {
  const launch = async (): Promise<Daemon> => {
    const [cmd, args] = command();
    await fsp.rm(socket, { force: true });
    const d = spawnDaemon(name, cmd, args, path.join(dir, `${name}.log`));
    await waitReady(d, () => socketAnswers(socket), 60_000);
    return d;
  };
  const out = {
    daemon: await launch(),
    async crashAndRestart() {
      await out.daemon.stop('SIGKILL');
      out.daemon = await launch();
    },
  };
  return out;
}

/**
 * `registries`: plain-HTTP registries on 127.0.0.1 the runtime may pull from (Docker trusts
 * loopback registries by itself; containerd is told).
 */
export async function startRuntime(kind: RuntimeKind, dir: string, registries: string[] = []): Promise<Runtime> {
  // a subnet and bridge no other test or runtime on this machine uses
  const cni: CniSetup =
    kind === 'crishim'
      ? { bridge: 'crik8s0', subnet: '10.98.0.0/16', ipamDir: path.join(dir, 'ipam') }
      : { bridge: 'ctrk8s0', subnet: '10.97.0.0/16', ipamDir: path.join(dir, 'ipam') };
  const confDir = path.join(dir, 'net.d');
  await writeCniConfig(confDir, cni);
  const socket = path.join(dir, `${kind}.sock`);
  if (kind === 'crishim') {
    const args = [
      path.join(REPO, 'dist', 'main.js'),
      '--container-runtime-endpoint',
      `unix://${socket}`,
      '--root-directory',
      path.join(dir, 'crishim-root'),
      '--cni-conf-dir',
      confDir,
    ];
    const w = await startWatched(dir, 'crishim', socket, () => [process.execPath, args]);
    return {
      kind,
      endpoint: `unix://${socket}`,
      cni,
      get daemon() {
        return w.daemon;
      },
      crashAndRestart: () => w.crashAndRestart(),
      stop: () => w.daemon.stop(),
    };
  }
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
  const w = await startWatched(dir, 'containerd', socket, () => ['containerd', ['--config', config]]);
  return {
    kind,
    endpoint: `unix://${socket}`,
    cni,
    get daemon() {
      return w.daemon;
    },
    crashAndRestart: () => w.crashAndRestart(),
    async stop() {
      // containerd's shims outlive it: stop what runs first, or the kubelet's pods stay behind
      await w.daemon.stop();
      execFileSync('sh', ['-c', `pkill -f 'containerd-shim.*-address ${socket}' || true`]);
    },
  };
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
