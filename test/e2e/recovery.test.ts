import { execFileSync } from 'child_process';
import { status } from '@grpc/grpc-js';
import { promises as fsp } from 'fs';
import * as path from 'path';
import {
  BUSYBOX,
  call,
  codeOf,
  containersOfPod,
  podConfig,
  reservedIps,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';

jest.setTimeout(300_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 209 });
  // every case checks that no netns holds this subnet: one left by an aborted earlier run would
  // fail them all, so say so once, with the container that holds it
  const stale = await podNetns();
  if (stale.length > 0) throw new Error(`before any case: ${netnsOwners(stale)}`);
});
afterAll(() => teardown(h));

async function files(dir: string): Promise<string[]> {
  return (await fsp.readdir(dir).catch(() => [] as string[])).filter((f) => !f.startsWith('corrupt'));
}

/** Network namespaces (Docker's) that still hold an address of this test's pod subnet. */
async function podNetns(): Promise<string[]> {
  const prefix = h.cni.subnet.split('.').slice(0, 3).join('.') + '.';
  const out: string[] = [];
  // `default` is the host's own namespace, where the bridge gateway lives
  for (const f of (await fsp.readdir('/var/run/docker/netns').catch(() => [] as string[])).filter(
    (n) => n !== 'default',
  )) {
    try {
      const addrs = execFileSync('nsenter', [`--net=/var/run/docker/netns/${f}`, 'ip', '-4', '-o', 'addr'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      if (addrs.includes(` ${prefix}`)) out.push(f);
    } catch {
      /* not a live namespace */
    }
  }
  return out;
}

/** Which containers hold these netns (by their sandbox key), for a message that names them. */
function netnsOwners(netns: string[]): string {
  const ids = execFileSync('docker', ['ps', '-aq', '--no-trunc'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  const rows = ids.length
    ? execFileSync(
        'docker',
        [
          'inspect',
          '--format',
          '{{.NetworkSettings.SandboxKey}}|{{.Id}}|{{index .Config.Labels "io.crishim.root"}}',
          ...ids,
        ],
        { encoding: 'utf8' },
      ).split('\n')
    : [];
  return netns
    .map((n) => {
      const owner = rows.find((r) => r.startsWith(`/var/run/docker/netns/${n}|`));
      const [, id, root] = owner?.split('|') ?? [];
      return owner
        ? `netns ${n} holds an address of this test's subnet; it belongs to container ${id.slice(0, 12)} of crishim root ${root === '<no value>' ? '(none)' : root}, left by an earlier run (docker rm -f ${id.slice(0, 12)})`
        : `netns ${n} holds an address of this test's subnet and no container owns it`;
    })
    .join('; ');
}

/** What the kubelet does after a failed RunPodSandbox: find the pod's sandboxes, stop and remove them. */
async function kubeletCleanup(name: string): Promise<void> {
  const items = (await call(h.runtime, 'ListPodSandbox', { filter: { label_selector: { test: name } } })).items ?? [];
  for (const s of items) {
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: s.id ?? '' });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: s.id ?? '' });
  }
}

async function expectNothingLeft(uid: string): Promise<void> {
  expect(await containersOfPod(uid)).toEqual([]);
  expect(await files(path.join(h.rootDir, 'sandbox'))).toEqual([]);
  expect(await files(h.cniCacheDir)).toEqual([]);
  expect(await reservedIps(h.cni.ipamDir)).toEqual([]);
  expect(await podNetns()).toEqual([]);
}

const HOST_NETWORK = { linux: { security_context: { namespace_options: { network: 'NODE' } } } };

describe.each([
  ['sandbox:after-create', 'pod network'],
  ['sandbox:after-checkpoint', 'pod network'],
  ['sandbox:after-start', 'pod network'],
  ['sandbox:mid-network', 'pod network'],
  ['sandbox:after-network', 'pod network'],
  // host-network checkpoints are written `ready` before the start
  ['sandbox:after-checkpoint', 'host network'],
])('kill -9 during RunPodSandbox at %s (%s)', (point, network) => {
  it('leaves nothing behind once crishim restarts and the kubelet retries', async () => {
    const name = `crash-${point.replace(/[^a-z]/g, '-')}${network === 'host network' ? '-host' : ''}`;
    const extra = network === 'host network' ? HOST_NETWORK : {};
    const config = podConfig(name, extra);
    await h.restart({ env: { CRISHIM_CRASH_AT: point } });
    const err = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
    expect(err.code).toBeGreaterThan(0);
    await h.relaunch({ CRISHIM_CRASH_AT: '' });
    // start-up reconciliation already undid the half-made sandbox
    expect((await call(h.runtime, 'ListPodSandbox', { filter: { label_selector: { test: name } } })).items).toEqual([]);
    await expectNothingLeft((config.metadata as { uid: string }).uid);
    await kubeletCleanup(name);
    await expectNothingLeft((config.metadata as { uid: string }).uid);
    // and the node still works
    const again = await call(h.runtime, 'RunPodSandbox', { config: podConfig(name, extra) });
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: again.pod_sandbox_id });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: again.pod_sandbox_id });
  });
});

describe('kill -9 between CreateContainer and StartContainer', () => {
  const create = (pod: string, config: Record<string, unknown>) =>
    call(h.runtime, 'CreateContainer', {
      pod_sandbox_id: pod,
      config: { metadata: { name: 'c', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
      sandbox_config: config,
    });

  it('a create that never answered leaves no attempt behind: the retry is attempt 0 again', async () => {
    await h.restart({ env: { CRISHIM_CRASH_AT: 'container:after-create' } });
    const config = podConfig('crash-container');
    const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
    expect((await codeOf(create(pod, config))).code).toBeGreaterThan(0);
    await h.relaunch({ CRISHIM_CRASH_AT: '' });
    // a never-started container the kubelet saw would count as a failed attempt 0 (a phantom restart)
    expect((await call(h.runtime, 'ListContainers', { filter: { pod_sandbox_id: pod } })).containers).toEqual([]);
    const uid = (config.metadata as { uid: string }).uid;
    expect((await containersOfPod(uid)).filter((c) => c.Labels['io.kubernetes.docker.type'] === 'container')).toEqual(
      [],
    );
    // the kubelet's retry: the same attempt, created and started
    const { container_id: id } = await create(pod, config);
    await call(h.runtime, 'StartContainer', { container_id: id });
    const listed = (await call(h.runtime, 'ListContainers', { filter: { pod_sandbox_id: pod } })).containers ?? [];
    expect(listed.map((c) => [c.id, c.metadata?.attempt, c.state])).toEqual([[id, 0, 'CONTAINER_RUNNING']]);
    await kubeletCleanup('crash-container');
    await expectNothingLeft(uid);
  });

  it('a created container whose start never came is gone after the restart, with its empty log file', async () => {
    const logDir = await fsp.mkdtemp(path.join(h.dir, 'pod-logs-'));
    const config = podConfig('crash-before-start', { log_directory: logDir });
    const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
    const { container_id: id } = await call(h.runtime, 'CreateContainer', {
      pod_sandbox_id: pod,
      config: { metadata: { name: 'c' }, image: { image: BUSYBOX }, command: ['true'], log_path: 'c/0.log' },
      sandbox_config: config,
    });
    // what a StartContainer killed before Docker's start leaves: the CRI log file, empty. A kubelet
    // that finds no container counts 0.log as a restart that happened
    await fsp.mkdir(path.join(logDir, 'c'));
    await fsp.writeFile(path.join(logDir, 'c', '0.log'), '');
    await h.restart({ kill: true });
    expect(await fsp.readdir(path.join(logDir, 'c'))).toEqual([]);
    const err = await codeOf(call(h.runtime, 'StartContainer', { container_id: id }));
    expect(err.code).toBe(status.NOT_FOUND);
    expect(err.details).toContain(id.slice(0, 12));
    await kubeletCleanup('crash-before-start');
    await expectNothingLeft((config.metadata as { uid: string }).uid);
  });
});

describe('start-up reconciliation', () => {
  it('never touches a half-made sandbox of another crishim sharing the engine', async () => {
    const { docker } = await import('./harness');
    // what another crishim (other root directory) has between create and checkpoint
    const foreign = await docker.createContainer({
      Image: 'registry.k8s.io/pause:3.10',
      Labels: {
        'io.kubernetes.docker.type': 'podsandbox',
        'io.crishim.created': '1',
        'io.crishim.root': '/var/lib/other-crishim',
      },
    });
    try {
      await h.restart();
      expect((await foreign.inspect()).State.Status).toBe('created');
    } finally {
      await foreign.remove({ force: true });
    }
  });
});
