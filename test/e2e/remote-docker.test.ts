/**
 * The docker-in-docker CI case: crishim talking to a Docker Engine over TCP.
 * Starts a second dockerd on 127.0.0.1 with its own data root, exec root, pid
 * file and bridge (so it cannot touch the first daemon's docker0).
 */
import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import Docker from 'dockerode';
import { status } from '@grpc/grpc-js';
import {
  BUSYBOX,
  call,
  codeOf,
  docker,
  podConfig,
  scrapeMetrics,
  startCrishim,
  teardown,
  waitForLog,
  type Crishim,
} from './harness';
import { startPrivateDockerd, type PrivateDockerd } from '../support/private-dockerd';

jest.setTimeout(240_000);

let dockerd: PrivateDockerd;
let dir: string;
let tcpEndpoint: string;
let remote: Docker;

async function waitFor(fn: () => Promise<unknown>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await fn();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

beforeAll(async () => {
  dockerd = await startPrivateDockerd({
    bridge: 'crishim-d2',
    tcp: true,
    images: ['registry.k8s.io/pause:3.10', BUSYBOX],
    from: docker,
  });
  dir = dockerd.dir;
  tcpEndpoint = dockerd.tcpEndpoint as string;
  remote = dockerd.api;
});

afterAll(async () => {
  await dockerd?.close();
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
    h = await startCrishim({ subnetIndex: 205, args: ['--docker-endpoint', tcpEndpoint] });
    await runAndCheck(h);
  });

  it('sees a runtime added by a daemon reload without waiting for its cache to expire', async () => {
    h = await startCrishim({ subnetIndex: 236, args: ['--docker-endpoint', tcpEndpoint] });
    const crishim = h;
    const handler = 'crishim-e2e-alt';
    const refused = await codeOf(
      call(crishim.runtime, 'RunPodSandbox', { config: podConfig('alt-runtime'), runtime_handler: handler }),
    );
    expect(refused.code).toBe(status.INVALID_ARGUMENT);
    expect(refused.details).toContain(handler);
    // what an operator does: add the runtime to daemon.json and reload dockerd (SIGHUP)
    await fsp.writeFile(dockerd.configFile, JSON.stringify({ runtimes: { [handler]: { path: 'runc' } } }));
    dockerd.signal('SIGHUP');
    await waitFor(
      async () => {
        const info = (await remote.info()) as { Runtimes?: Record<string, unknown> };
        if (!info.Runtimes?.[handler]) throw new Error('dockerd has not reloaded yet');
      },
      'dockerd did not reload',
      20_000,
    );
    // engine info is cached for a minute; the reload event must refresh it well before that
    let id = '';
    await waitFor(
      async () => {
        id = (
          await call(crishim.runtime, 'RunPodSandbox', { config: podConfig('alt-runtime'), runtime_handler: handler })
        ).pod_sandbox_id;
      },
      'the new runtime handler was still refused',
      20_000,
    );
    expect((await remote.getContainer(id).inspect()).HostConfig.Runtime).toBe(handler);
    await call(crishim.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    await call(crishim.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    await fsp.writeFile(dockerd.configFile, '{}\n');
    dockerd.signal('SIGHUP');
  });

  it('honours DOCKER_HOST when the flag is absent', async () => {
    h = await startCrishim({ subnetIndex: 206, env: { DOCKER_HOST: tcpEndpoint } });
    await runAndCheck(h);
  });
});

describe('a Docker Engine outage', () => {
  let h: Crishim | undefined;
  afterAll(() => teardown(h));

  it('fails fast with UNAVAILABLE, reports RuntimeReady=false, and recovers without a restart', async () => {
    h = await startCrishim({ subnetIndex: 205, args: ['--docker-endpoint', tcpEndpoint] });
    const crishim = h;
    const events: string[] = [];
    const stream = crishim.runtime.GetContainerEvents({});
    stream.on('data', (e: { container_id: string; container_event_type: string }) =>
      events.push(`${e.container_id}:${e.container_event_type}`),
    );
    stream.on('error', () => undefined);
    // the subscription is live once a first pod's events arrive; from then on nothing may be missed
    const probe = (await call(crishim.runtime, 'RunPodSandbox', { config: podConfig('events-probe') })).pod_sandbox_id;
    await waitFor(
      async () => {
        if (!events.includes(`${probe}:CONTAINER_STARTED_EVENT`)) throw new Error('no event yet');
      },
      'the event subscription never delivered',
      20_000,
    );
    // a running pod, which dies with the engine and vanishes while crishim cannot hear about it
    const before = (await call(crishim.runtime, 'RunPodSandbox', { config: podConfig('before-outage') }))
      .pod_sandbox_id;
    // a never-started pause container of ours, left from before this crishim started (its start-up pass could not see it)
    const leftover = await remote.createContainer({
      Image: 'registry.k8s.io/pause:3.10',
      Labels: {
        'io.kubernetes.docker.type': 'podsandbox',
        'io.crishim.created': '1',
        'io.crishim.root': crishim.rootDir,
      },
    });
    await waitFor(
      async () => {
        if (!events.includes(`${before}:CONTAINER_STARTED_EVENT`)) throw new Error('no start event yet');
      },
      'no start event before the outage',
      20_000,
    );

    await dockerd.stop();
    // gone for good: the restarted engine never emits a destroy event for it
    await fsp.rm(path.join(dir, 'data', 'containers', before), { recursive: true, force: true });
    const failed = await codeOf(call(crishim.runtime, 'ListPodSandbox', {}, 10_000));
    expect(failed.code).toBe(status.UNAVAILABLE);
    expect(failed.details).toMatch(/docker/i);
    const s = await call(crishim.runtime, 'Status', {});
    const runtimeReady = s.status?.conditions?.find((c) => c.type === 'RuntimeReady');
    expect(runtimeReady?.status).toBe(false);
    expect(runtimeReady?.message).toMatch(/docker/i);

    await dockerd.start();
    await waitFor(
      async () => {
        const st = await call(crishim.runtime, 'Status', {});
        if (!st.status?.conditions?.find((c) => c.type === 'RuntimeReady')?.status) throw new Error('still not ready');
      },
      'RuntimeReady never came back',
      30_000,
    );
    const config = podConfig('after-outage');
    const { pod_sandbox_id: id } = await call(crishim.runtime, 'RunPodSandbox', { config });
    // the event stream resubscribed to the restarted engine
    await waitFor(
      async () => {
        if (!events.includes(`${id}:CONTAINER_STARTED_EVENT`)) throw new Error(`no event yet: ${events.join(',')}`);
      },
      'no event after the outage',
      20_000,
    );
    // the vanished pod is reported stopped and deleted, once each, before the new pod's events
    const mine = events.filter((e) => e.startsWith(`${before}:`));
    expect(mine).toEqual([
      `${before}:CONTAINER_CREATED_EVENT`,
      `${before}:CONTAINER_STARTED_EVENT`,
      `${before}:CONTAINER_STOPPED_EVENT`,
      `${before}:CONTAINER_DELETED_EVENT`,
    ]);
    expect(events.indexOf(`${before}:CONTAINER_DELETED_EVENT`)).toBeLessThan(
      events.indexOf(`${id}:CONTAINER_STARTED_EVENT`),
    );
    // reconciliation ran again once the engine was back
    await waitFor(
      async () => {
        const left = await remote.listContainers({ all: true, filters: { id: [leftover.id] } });
        if (left.length > 0) throw new Error(`${leftover.id} is still there`);
      },
      'the leftover pause container was not reconciled after the outage',
      20_000,
    );
    stream.cancel();
    for (const pod of [id, before, probe]) {
      await call(crishim.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
      await call(crishim.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
    }
    expect(await remote.listContainers({ all: true, filters: { label: ['io.kubernetes.docker.type'] } })).toEqual([]);
  });
});

describe('container logs across a Docker restart (json-file read locally)', () => {
  let h: Crishim | undefined;
  afterAll(() => teardown(h));

  /** n=… numbers of the stdout lines of CRI text, in file order. */
  const numbersOf = (text: string): number[] =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => Number(/ stdout F n=(\d+)$/.exec(l)?.[1] ?? NaN));
  const upTo = (n: number): number[] => Array.from({ length: n }, (_, i) => i + 1);

  it('copies every line written before the engine went down exactly once', async () => {
    h = await startCrishim({ subnetIndex: 238, args: ['--docker-endpoint', dockerd.socketEndpoint] });
    const crishim = h;
    const logDir = path.join(crishim.dir, 'pods', 'restart');
    const config = podConfig('logs-restart', {
      log_directory: logDir,
      linux: { security_context: { namespace_options: { network: 'NODE' } } },
    });
    const { pod_sandbox_id: pod } = await call(crishim.runtime, 'RunPodSandbox', { config });
    const { container_id: id } = await call(crishim.runtime, 'CreateContainer', {
      pod_sandbox_id: pod,
      config: {
        metadata: { name: 'counter', attempt: 0 },
        image: { image: BUSYBOX },
        // about 10,000 lines a second, until the engine stops it
        command: ['sh', '-c', 'i=1; while true; do echo n=$i; i=$((i+1)); [ $((i % 100)) = 0 ] && usleep 10000; done'],
        log_path: 'counter.log',
      },
      sandbox_config: config,
    });
    await call(crishim.runtime, 'StartContainer', { container_id: id });
    const file = path.join(logDir, 'counter.log');
    await waitFor(
      async () => {
        if (!(await fsp.readFile(file, 'utf8').catch(() => '')).includes('n=5000\n')) throw new Error('not yet');
      },
      'the copy never got going',
      30_000,
    );

    // the engine goes down mid-stream (its containers with it) and comes back
    await dockerd.restart();
    // what Docker itself holds: the last number it stored
    const jsonPath = (await remote.getContainer(id).inspect()).LogPath;
    const stored = (await fsp.readFile(jsonPath, 'utf8')).trimEnd().split('\n');
    const last = Number(/n=(\d+)/.exec(stored[stored.length - 1])?.[1]);
    expect(last).toBeGreaterThan(5000);
    await waitFor(
      async () => {
        const n = numbersOf(await fsp.readFile(file, 'utf8'));
        if (n[n.length - 1] !== last) throw new Error(`at ${n[n.length - 1]} of ${last}`);
      },
      'the lines written before the restart were not all copied',
      30_000,
    );
    expect(numbersOf(await fsp.readFile(file, 'utf8'))).toEqual(upTo(last));

    await call(crishim.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
    await call(crishim.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
  });
});

describe('a Docker Engine that stops answering', () => {
  let h: Crishim | undefined;
  afterAll(() => teardown(h));

  it('reports RuntimeReady=false naming the hung call, while List still answers, and recovers', async () => {
    h = await startCrishim({
      subnetIndex: 205,
      args: ['--docker-endpoint', tcpEndpoint, '--docker-stall-timeout', '2', '--metrics-bind-address=127.0.0.1:0'],
    });
    const crishim = h;
    const pod = (await call(crishim.runtime, 'RunPodSandbox', { config: podConfig('before-freeze') })).pod_sandbox_id;
    const runtimeReady = async () =>
      (await call(crishim.runtime, 'Status', {})).status?.conditions?.find((c) => c.type === 'RuntimeReady');
    expect((await runtimeReady())?.status).toBe(true);

    // a frozen dockerd accepts connections and never answers: no call fails, every one hangs
    dockerd.signal('SIGSTOP');
    try {
      await waitFor(
        async () => {
          if ((await runtimeReady())?.status !== false) throw new Error('still RuntimeReady');
        },
        'RuntimeReady stayed true with dockerd frozen',
        30_000,
      );
      const cond = await runtimeReady();
      expect(cond?.reason).toBe('DockerDaemonNotResponding');
      expect(cond?.message).toMatch(/^docker \w+.* has not answered for \d+ s: dockerd may be hung$/);
      // the relist is served from the view: without the watch nothing would tell the kubelet
      const listed = await call(crishim.runtime, 'ListPodSandbox', {}, 5_000);
      expect(listed.items.map((s) => s.id)).toContain(pod);
      // and for Prometheus: how long the oldest prompt call has waited
      const waited = /^crishim_docker_oldest_call_seconds (\S+)$/m.exec(await scrapeMetrics(crishim))?.[1];
      expect(Number(waited)).toBeGreaterThanOrEqual(2);
      // logged by the watch's own timer (a quarter of the timeout), maybe after Status said so
      await waitForLog(
        crishim,
        /docker \w+ has not answered for \d+ s; Status reports RuntimeReady=false until it answers/,
      );
    } finally {
      dockerd.signal('SIGCONT');
    }
    await waitFor(
      async () => {
        if ((await runtimeReady())?.status !== true) throw new Error('still not ready');
      },
      'RuntimeReady never came back after SIGCONT',
      30_000,
    );
    await waitForLog(crishim, /docker \w+ answered after \d+ s/);
    await call(crishim.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
    await call(crishim.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
  });
});
