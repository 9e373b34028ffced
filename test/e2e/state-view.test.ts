/**
 * The state view (src/state/) against changes made behind crishim's back: what
 * `docker kill`, `docker rm -f`, `docker stop` of a pause container and `docker
 * run` do shows in the next List and Status within the event lag, and
 * GetContainerEvents reports every transition once, in order, also across a
 * restart of the Docker Engine (a second dockerd of this file's own; the
 * shared one is never restarted).
 */
import { status } from '@grpc/grpc-js';
import type Docker from 'dockerode';
import {
  BUSYBOX,
  call,
  codeOf,
  docker,
  metricValue,
  podConfig,
  scrapeMetrics,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';
import { startPrivateDockerd, type PrivateDockerd } from '../support/private-dockerd';
import type { ContainerEventResponse__Output } from '../../src/generated/runtime/v1/ContainerEventResponse';
import { DockerodeEngine } from '../../src/docker/dockerode-engine';
import { followDockerEvents, type DockerEvent, type EventFilters } from '../../src/docker/events';
import { VIEW_EVENT_FILTERS, viewEventFilters } from '../../src/state/docker-events';
import { recordingLogger } from '../support/recording-logger';

jest.setTimeout(240_000);

/** How stale List and Status may be after a change made behind crishim's back: the event lag, far under this. */
const LAG_MS = 200;

/**
 * Polls `read` until `ok` holds, for at most LAG_MS after the change; fails with the last value.
 * A poll, not a timing assertion on speed: it only bounds how long the view may be wrong.
 */
async function within<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + LAG_MS;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)} ${LAG_MS} ms after the change`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

type Ev = ContainerEventResponse__Output;

function subscribe(h: Crishim): { events: Ev[]; cancel(): void } {
  const events: Ev[] = [];
  const stream = h.runtime.GetContainerEvents({});
  stream.on('data', (e: Ev) => events.push(e));
  stream.on('error', () => undefined);
  return { events, cancel: () => stream.cancel() };
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const typesOf = (events: Ev[], id: string): string[] =>
  events.filter((e) => e.container_id === id).map((e) => e.container_event_type.replace(/^CONTAINER_|_EVENT$/g, ''));

async function runPod(
  h: Crishim,
  name: string,
  hostNetwork = true,
): Promise<{ pod: string; ctr: string; config: Record<string, unknown> }> {
  const config = podConfig(
    name,
    hostNetwork ? { linux: { security_context: { namespace_options: { network: 'NODE' } } } } : {},
  );
  const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
  const { container_id: ctr } = await call(h.runtime, 'CreateContainer', {
    pod_sandbox_id: pod,
    config: { metadata: { name: 'app', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
    sandbox_config: config,
  });
  await call(h.runtime, 'StartContainer', { container_id: ctr });
  return { pod, ctr, config };
}

async function removePod(h: Crishim, pod: string): Promise<void> {
  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
}

describe('changes made behind crishim’s back', () => {
  let h: Crishim;
  beforeAll(async () => {
    h = await startCrishim({ subnetIndex: 247, args: ['--metrics-bind-address', '127.0.0.1:0'] });
  });
  afterAll(() => teardown(h));

  const listState = async (id: string): Promise<string> =>
    (await call(h.runtime, 'ListContainers', {})).containers.find((c) => c.id === id)?.state ?? 'absent';
  const statusState = async (id: string): Promise<string> =>
    call(h.runtime, 'ContainerStatus', { container_id: id }).then(
      (r) => r.status?.state ?? 'none',
      () => 'not found',
    );

  it('docker kill, docker rm -f and docker stop of the pause container show in List and Status at once, with one event each', async () => {
    const sub = subscribe(h);
    // the first subscriber starts crishim's own Docker subscription: give it time to be live
    await new Promise((r) => setTimeout(r, 500));
    const { pod, ctr } = await runPod(h, 'behind-back');
    await waitFor('the started event', () => typesOf(sub.events, ctr).includes('STARTED'));
    // the view has it (first lists after the start)
    expect(await listState(ctr)).toBe('CONTAINER_RUNNING');

    await docker.getContainer(ctr).kill();
    await within(
      'ListContainers after docker kill',
      () => listState(ctr),
      (s) => s === 'CONTAINER_EXITED',
    );
    const killed = await within(
      'ContainerStatus after docker kill',
      () => call(h.runtime, 'ContainerStatus', { container_id: ctr }),
      (r) => r.status?.state === 'CONTAINER_EXITED',
    );
    expect(killed.status?.exit_code).toBe(137);
    expect(BigInt(killed.status?.finished_at ?? '0')).toBeGreaterThan(0n);

    await docker.getContainer(ctr).remove({ force: true });
    await within(
      'ListContainers after docker rm -f',
      () => listState(ctr),
      (s) => s === 'absent',
    );
    await within(
      'ContainerStatus after docker rm -f',
      () => statusState(ctr),
      (s) => s === 'not found',
    );
    expect((await codeOf(call(h.runtime, 'ContainerStatus', { container_id: ctr }))).code).toBe(status.NOT_FOUND);

    await docker.getContainer(pod).stop({ t: 0 });
    const sandboxState = async (): Promise<string> =>
      (await call(h.runtime, 'ListPodSandbox', {})).items.find((s) => s.id === pod)?.state ?? 'absent';
    await within(
      'ListPodSandbox after docker stop of the pause container',
      sandboxState,
      (s) => s === 'SANDBOX_NOTREADY',
    );
    await within(
      'PodSandboxStatus after docker stop of the pause container',
      async () => (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: pod })).status?.state,
      (s) => s === 'SANDBOX_NOTREADY',
    );

    await waitFor('the sandbox stopped event', () => typesOf(sub.events, pod).includes('STOPPED'));
    await new Promise((r) => setTimeout(r, 300));
    sub.cancel();
    expect(typesOf(sub.events, ctr)).toEqual(['CREATED', 'STARTED', 'STOPPED', 'DELETED']);
    expect(typesOf(sub.events, pod)).toEqual(['CREATED', 'STARTED', 'STOPPED']);
    // each event's statuses match the transition it reports
    const stopped = sub.events.find(
      (e) => e.container_id === ctr && e.container_event_type === 'CONTAINER_STOPPED_EVENT',
    );
    expect(stopped?.containers_statuses.find((s) => s.id === ctr)?.state).toBe('CONTAINER_EXITED');
    await removePod(h, pod);
  });

  it('the view hears its containers’ lifecycle from Docker, and of their exec probes only the end', async () => {
    const engine = new DockerodeEngine(docker);
    const { logger } = recordingLogger('error');
    const heard = (filters: EventFilters): { actions: (id: string) => string[]; close(): void } => {
      const events: DockerEvent[] = [];
      const source = followDockerEvents(engine, filters, (ev) => events.push(ev), logger);
      return {
        actions: (id) => events.filter((e) => e.Actor.ID === id).map((e) => e.Action.replace(/:.*/, '')),
        close: () => source.close(),
      };
    };
    // the same subscription without the action filter: Docker does send exec events for these containers
    const { event: _actions, ...unfiltered } = VIEW_EVENT_FILTERS;
    const view = heard(viewEventFilters(true));
    const all = heard(unfiltered);
    await new Promise((r) => setTimeout(r, 500));
    const { pod, ctr } = await runPod(h, 'exec-events');
    for (let i = 0; i < 3; i++) {
      const r = await call(h.runtime, 'ExecSync', { container_id: ctr, cmd: ['true'], timeout: '10' });
      expect(r.exit_code).toBe(0);
    }
    await removePod(h, pod);
    await waitFor('both subscriptions to hear the removal', () =>
      [view, all].every((s) => s.actions(ctr).includes('destroy')),
    );
    view.close();
    all.close();
    expect(all.actions(ctr).filter((a) => a.startsWith('exec_'))).toHaveLength(9);
    const ends = ['exec_die', 'exec_die', 'exec_die'];
    expect(view.actions(ctr)).toEqual(['create', 'start', ...ends, 'die', 'stop', 'destroy']);
  });

  it('an exec probe asks Docker only to run the exec: whether its container runs comes from the view', async () => {
    const requests = async (route: string): Promise<number> =>
      metricValue(await scrapeMetrics(h), 'crishim_docker_request_duration_seconds_count', { route });
    const INSPECT = '/containers/{id}/json';
    const { pod, ctr } = await runPod(h, 'exec-view');
    await call(h.runtime, 'ContainerStatus', { container_id: ctr });
    // an engine's first exec is inspected for: nothing has shown yet that it sends exec_die
    await call(h.runtime, 'ExecSync', { container_id: ctr, cmd: ['true'], timeout: '10' });
    const [inspects0, execs0] = [await requests(INSPECT), await requests('/containers/{id}/exec')];
    const execInspects0 = await requests('/exec/{id}/json');
    for (let i = 0; i < 5; i++) {
      const r = await call(h.runtime, 'ExecSync', { container_id: ctr, cmd: ['true'], timeout: '10' });
      expect(r.exit_code).toBe(0);
    }
    expect(await requests(INSPECT)).toBe(inspects0);
    expect(await requests('/containers/{id}/exec')).toBe(execs0 + 5);
    // nor for how the exec ended: its exec_die event says (a late one may cost one inspect)
    expect(await requests('/exec/{id}/json')).toBeLessThanOrEqual(execInspects0 + 1);
    // a stopped container's probes (the kubelet's, while it tears a pod down) cost no Docker call at all
    await call(h.runtime, 'StopContainer', { container_id: ctr, timeout: 0 });
    await call(h.runtime, 'ContainerStatus', { container_id: ctr });
    const [inspects1, execs1] = [await requests(INSPECT), await requests('/containers/{id}/exec')];
    for (let i = 0; i < 5; i++) {
      const failed = await codeOf(call(h.runtime, 'ExecSync', { container_id: ctr, cmd: ['true'], timeout: '10' }));
      expect(failed).toMatchObject({
        code: status.FAILED_PRECONDITION,
        details: expect.stringContaining('not running'),
      });
    }
    expect(await requests(INSPECT)).toBe(inspects1);
    expect(await requests('/containers/{id}/exec')).toBe(execs1);
    await removePod(h, pod);
  });

  it('a container created behind crishim’s back with its labels shows in the next List', async () => {
    const { pod, ctr } = await runPod(h, 'foreign');
    const info = await docker.getContainer(ctr).inspect();
    // what a second crishim, or an operator copying a container, would make
    const foreign = await docker.createContainer({
      Image: BUSYBOX,
      Cmd: ['sleep', '3600'],
      Labels: { ...info.Config.Labels, 'io.kubernetes.container.name': 'foreign' },
      HostConfig: { NetworkMode: `container:${pod}` },
    });
    try {
      await within(
        'ListContainers after docker create',
        () => listState(foreign.id),
        (s) => s === 'CONTAINER_CREATED',
      );
      await foreign.start();
      await within(
        'ListContainers after docker start',
        () => listState(foreign.id),
        (s) => s === 'CONTAINER_RUNNING',
      );
      await within(
        'ContainerStatus after docker start',
        () => statusState(foreign.id),
        (s) => s === 'CONTAINER_RUNNING',
      );
    } finally {
      await foreign.remove({ force: true }).catch(() => undefined);
    }
    await within(
      'ListContainers after the foreign container is removed',
      () => listState(foreign.id),
      (s) => s === 'absent',
    );
    await removePod(h, pod);
  });

  it('churn: containers that exit at once are listed and reported exactly once, in order', async () => {
    const sub = subscribe(h);
    await new Promise((r) => setTimeout(r, 500));
    const { pod, config } = await runPod(h, 'churn');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { container_id: id } = await call(h.runtime, 'CreateContainer', {
        pod_sandbox_id: pod,
        config: { metadata: { name: `short-${i}`, attempt: 0 }, image: { image: BUSYBOX }, command: ['true'] },
        sandbox_config: config,
      });
      ids.push(id);
      await call(h.runtime, 'StartContainer', { container_id: id });
    }
    for (const id of ids) {
      await waitFor(`${id} to exit`, async () => (await docker.getContainer(id).inspect()).State.Status === 'exited');
      await within(
        'ListContainers after a container exited',
        () => listState(id),
        (s) => s === 'CONTAINER_EXITED',
      );
    }
    for (const id of ids) await call(h.runtime, 'RemoveContainer', { container_id: id });
    await waitFor('every deleted event', () => ids.every((id) => typesOf(sub.events, id).includes('DELETED')));
    await new Promise((r) => setTimeout(r, 300));
    sub.cancel();
    for (const id of ids) expect(typesOf(sub.events, id)).toEqual(['CREATED', 'STARTED', 'STOPPED', 'DELETED']);
    await removePod(h, pod);
  });
});

describe('across a Docker Engine restart', () => {
  let dockerd: PrivateDockerd | undefined;
  let remote: Docker;
  let h: Crishim | undefined;

  beforeAll(async () => {
    dockerd = await startPrivateDockerd({
      bridge: 'crishim-sv2',
      images: ['registry.k8s.io/pause:3.10', BUSYBOX],
      from: docker,
    });
    remote = dockerd.api;
    h = await startCrishim({ subnetIndex: 248, args: ['--docker-endpoint', dockerd.socketEndpoint] });
  });

  afterAll(async () => {
    await teardown(h);
    await dockerd?.close();
  });

  it('List, Status and events stay right through a restart, and changes after it show at once', async () => {
    const crishim = h as Crishim;
    const sub = subscribe(crishim);
    await new Promise((r) => setTimeout(r, 500));
    const { pod, ctr } = await runPod(crishim, 'restart');
    await waitFor('the started event', () => typesOf(sub.events, ctr).includes('STARTED'));

    // the engine goes down (its containers die with it) and comes back with them exited
    await dockerd?.stop();
    // a call racing the event stream's end may still be answered from the view (within the
    // event lag docs/reliability.md allows); once the loss is seen, List must say the engine is gone
    const failed = await within(
      'ListContainers with the engine down',
      () => codeOf(call(crishim.runtime, 'ListContainers', {}, 10_000)).catch(() => ({ code: status.OK, details: '' })),
      (f) => f.code !== status.OK,
    );
    expect(failed.code).toBe(status.UNAVAILABLE);
    await dockerd?.start();
    await waitFor(
      'List to work again',
      async () => (await call(crishim.runtime, 'ListContainers', {}).catch(() => undefined)) !== undefined,
      30_000,
    );
    expect((await call(crishim.runtime, 'ListContainers', {})).containers.find((c) => c.id === ctr)?.state).toBe(
      'CONTAINER_EXITED',
    );
    expect((await call(crishim.runtime, 'ListPodSandbox', {})).items.find((s) => s.id === pod)?.state).toBe(
      'SANDBOX_NOTREADY',
    );
    expect((await call(crishim.runtime, 'ContainerStatus', { container_id: ctr })).status?.state).toBe(
      'CONTAINER_EXITED',
    );
    await waitFor(
      'the stopped events',
      () => typesOf(sub.events, ctr).includes('STOPPED') && typesOf(sub.events, pod).includes('STOPPED'),
      30_000,
    );

    // after the restart the view is fed by the new event stream: a change behind our back shows at once
    await remote.getContainer(ctr).remove({ force: true });
    await within(
      'ListContainers after docker rm -f on the restarted engine',
      async () => (await call(crishim.runtime, 'ListContainers', {})).containers.some((c) => c.id === ctr),
      (present) => !present,
    );
    await waitFor('the deleted event', () => typesOf(sub.events, ctr).includes('DELETED'));
    await new Promise((r) => setTimeout(r, 300));
    sub.cancel();
    expect(typesOf(sub.events, ctr)).toEqual(['CREATED', 'STARTED', 'STOPPED', 'DELETED']);
    expect(typesOf(sub.events, pod)).toEqual(['CREATED', 'STARTED', 'STOPPED']);
    await removePod(crishim, pod);
  });
});
