/**
 * The docker-in-docker CI case: crishim talking to a Docker Engine over TCP.
 * Starts a second dockerd on 127.0.0.1 with its own data root, exec root, pid
 * file and bridge (so it cannot touch the first daemon's docker0).
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import Docker from 'dockerode';
import { status } from '@grpc/grpc-js';
import { call, codeOf, docker, podConfig, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(240_000);

const BRIDGE = 'crishim-d2';
let dir: string;
let dockerd: ChildProcess | undefined;
let port: number;
let remote: Docker;

async function waitFor(fn: () => Promise<unknown>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await fn();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

function startDockerd(): ChildProcess {
  return spawn('dockerd', [
    '--host', `tcp://127.0.0.1:${port}`,
    '--data-root', path.join(dir, 'data'),
    '--exec-root', path.join(dir, 'exec'),
    '--pidfile', path.join(dir, 'dockerd.pid'),
    '--bridge', BRIDGE,
    '--iptables=false',
    '--ip-masq=false',
  ], { stdio: ['ignore', 'ignore', 'ignore'] });
}

async function stopDockerd(): Promise<void> {
  if (!dockerd || dockerd.exitCode !== null) return;
  const d = dockerd;
  d.kill('SIGTERM');
  await new Promise((r) => d.once('exit', r));
}

beforeAll(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-dockerd2-'));
  port = 20000 + Math.floor(Math.random() * 10000);
  try {
    execFileSync('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
  } catch {
    /* left from an earlier run */
  }
  execFileSync('ip', ['link', 'set', BRIDGE, 'up']);
  dockerd = startDockerd();
  remote = new Docker({ host: '127.0.0.1', port, protocol: 'http' });
  await waitFor(() => remote.ping(), 'second dockerd did not come up');
  // the second engine has no images: hand it the pause image
  const tar = await docker.getImage('registry.k8s.io/pause:3.10').get();
  await remote.loadImage(tar);
});

afterAll(async () => {
  if (remote) {
    for (const c of await remote.listContainers({ all: true }).catch(() => [])) await remote.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
  }
  await stopDockerd();
  try {
    execFileSync('ip', ['link', 'del', BRIDGE]);
  } catch {
    /* already gone */
  }
  await fsp.rm(dir, { recursive: true, force: true });
});

describe('a remote Docker endpoint', () => {
  let h: Crishim | undefined;
  afterEach(async () => {
    await teardown(h);
    h = undefined;
  });

  async function runAndCheck(crishim: Crishim): Promise<void> {
    const config = podConfig('remote');
    const { pod_sandbox_id: id } = await call(crishim.runtime, 'RunPodSandbox', { config });
    // the sandbox lives on the second engine, not the first
    const info = await remote.getContainer(id).inspect();
    expect(info.Config.Labels['io.kubernetes.docker.type']).toBe('podsandbox');
    await expect(docker.getContainer(id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    const ip = (await call(crishim.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status?.network?.ip ?? '';
    expect(ip.startsWith(crishim.cni.subnet.split('.').slice(0, 3).join('.') + '.')).toBe(true);
    expect(() => execFileSync('ping', ['-c', '1', '-W', '3', ip])).not.toThrow();
    const v = await call(crishim.runtime, 'Version', {});
    expect(v.runtime_version).toBe((await remote.version()).Version);
    await call(crishim.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    await call(crishim.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    expect(await remote.listContainers({ all: true, filters: { label: ['io.kubernetes.docker.type'] } })).toEqual([]);
  }

  it('runs a networked sandbox through --docker-endpoint tcp://', async () => {
    h = await startCrishim({ subnetIndex: 205, args: ['--docker-endpoint', `tcp://127.0.0.1:${port}`] });
    await runAndCheck(h);
  });

  it('honours DOCKER_HOST when the flag is absent', async () => {
    h = await startCrishim({ subnetIndex: 206, env: { DOCKER_HOST: `tcp://127.0.0.1:${port}` } });
    await runAndCheck(h);
  });
});

describe('a Docker Engine outage', () => {
  let h: Crishim | undefined;
  afterAll(() => teardown(h));

  it('fails fast with UNAVAILABLE, reports RuntimeReady=false, and recovers without a restart', async () => {
    h = await startCrishim({ subnetIndex: 205, args: ['--docker-endpoint', `tcp://127.0.0.1:${port}`] });
    const crishim = h;
    const events: string[] = [];
    const stream = crishim.runtime.GetContainerEvents({});
    stream.on('data', (e: { container_id: string; container_event_type: string }) => events.push(`${e.container_id}:${e.container_event_type}`));
    stream.on('error', () => undefined);

    await stopDockerd();
    const failed = await codeOf(call(crishim.runtime, 'ListPodSandbox', {}, 10_000));
    expect(failed.code).toBe(status.UNAVAILABLE);
    expect(failed.details).toMatch(/docker/i);
    const s = await call(crishim.runtime, 'Status', {});
    const runtimeReady = s.status?.conditions?.find((c) => c.type === 'RuntimeReady');
    expect(runtimeReady?.status).toBe(false);
    expect(runtimeReady?.message).toMatch(/docker/i);

    dockerd = startDockerd();
    await waitFor(() => remote.ping(), 'second dockerd did not come back');
    await waitFor(async () => {
      const st = await call(crishim.runtime, 'Status', {});
      if (!st.status?.conditions?.find((c) => c.type === 'RuntimeReady')?.status) throw new Error('still not ready');
    }, 'RuntimeReady never came back', 30_000);
    const config = podConfig('after-outage');
    const { pod_sandbox_id: id } = await call(crishim.runtime, 'RunPodSandbox', { config });
    // the event stream resubscribed to the restarted engine
    await waitFor(async () => {
      if (!events.includes(`${id}:CONTAINER_STARTED_EVENT`)) throw new Error(`no event yet: ${events.join(',')}`);
    }, 'no event after the outage', 20_000);
    stream.cancel();
    await call(crishim.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    await call(crishim.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
  });
});
