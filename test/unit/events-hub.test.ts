import { PassThrough } from 'stream';
import * as winston from 'winston';
import { createEventHub } from '../../src/events/hub';
import type { ServiceDeps } from '../../src/service-deps';
import { SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_LABEL, TYPE_SANDBOX } from '../../src/labels';
import { FakeEngine } from '../support/fake-engine';
import { createStateStore, type StateStore } from '../../src/state/store';

const SEC = 1e9;
const BASE = Date.parse('2026-11-22T10:00:00Z') * 1e6;
const iso = (nano: number): string =>
  new Date(Math.floor(nano / 1e6)).toISOString().replace('Z', '') + String(nano % 1e6).padStart(6, '0') + 'Z';

const podLabels = { [TYPE_LABEL]: TYPE_SANDBOX };
const ctrLabels = { [TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: 'p1' };

/** The shared fake, with event streams the test feeds and ends, and a list and clock it sets. */
function fakeDocker() {
  const state = {
    now: BASE,
    list: [] as Array<{ Id: string; State: string; Labels: Record<string, string> }>,
    streams: [] as PassThrough[],
    onSubscribe: (_s: PassThrough): void => undefined,
  };
  const api = new FakeEngine();
  api.info = async () => ({ SystemTime: iso(state.now) });
  api.listContainers = async () =>
    state.list.map((c) => ({ ...c, Names: [], Image: '', ImageID: '', Created: 0, Status: c.State }));
  api.events = async () => {
    const s = new PassThrough();
    state.streams.push(s);
    setImmediate(() => state.onSubscribe(s));
    return s;
  };
  return { state, api };
}

function emit(s: PassThrough, id: string, action: string, timeNano: number, labels: Record<string, string>): void {
  s.write(
    JSON.stringify({
      Type: 'container',
      Action: action,
      Actor: { ID: id, Attributes: labels },
      time: Math.floor(timeNano / SEC),
      timeNano,
    }) + '\n',
  );
}

/** What the hub needs besides Docker: a silent logger, no checkpoints (and a view, when given). */
function hubDeps(api: unknown, state?: StateStore): ServiceDeps {
  return {
    docker: api,
    state,
    logger: winston.createLogger({ silent: true }),
    checkpoints: { list: async () => [], read: async () => undefined },
    config: { rootDirectory: '/nonexistent' },
  } as unknown as ServiceDeps;
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

type Listed = Array<{ Id: string; State: string; Labels: Record<string, string> }>;

/**
 * A hub over `fake` whose first list is `list`, with one subscriber, once its first subscription
 * is up; `seen` names the delivered events as `id:type`.
 */
async function subscribedHub(fake: ReturnType<typeof fakeDocker>, list: Listed, view?: StateStore) {
  fake.state.list = list;
  const hub = createEventHub(hubDeps(fake.api, view));
  const sub = hub.subscribe();
  try {
    await until(() => fake.state.streams.length === 1, 'first subscription');
  } catch (err) {
    hub.close();
    throw err;
  }
  const seen = (): string[] => sub.queue.map((e) => `${e.container_id}:${e.container_event_type}`);
  /** Ends the first stream (dockerd restarts); answers what was delivered once `atLeast` events were, and 200 ms later, so a late duplicate would show. */
  const afterRestart = async (atLeast: number): Promise<string[]> => {
    fake.state.streams[0].end();
    await until(() => seen().length >= atLeast, `${atLeast} events after the restart`);
    await new Promise((r) => setTimeout(r, 200));
    return seen();
  };
  return { hub, sub, seen, afterRestart };
}

/**
 * A view with no stream of its own (only the hub tells it of events) over an engine where c1 runs;
 * `c1` is what inspect answers, to change.
 */
async function viewOfRunningC1(fake: ReturnType<typeof fakeDocker>) {
  const c1 = exitedC1();
  Object.assign(c1.State, { Status: 'running', Running: true });
  // a copy, as each inspect answers: the view keeps what it was told
  fake.api.findContainer = async (id: string) =>
    id === 'c1' ? (structuredClone(c1) as unknown as Awaited<ReturnType<FakeEngine['findContainer']>>) : undefined;
  fake.state.list = [{ Id: 'c1', State: 'running', Labels: ctrLabels }];
  const view = createStateStore(fake.api, winston.createLogger({ silent: true }), { subscribe: false, resyncMs: 0 });
  await view.list();
  return { c1, view };
}

/** Container c1 as inspect shows it once it exited. */
const exitedC1 = () => ({
  Id: 'c1',
  Name: '/k8s_app',
  Created: '2026-11-22T10:00:00Z',
  Image: 'sha256:1',
  Config: { Image: 'busybox', Labels: ctrLabels },
  State: {
    Status: 'exited',
    Running: false,
    ExitCode: 137,
    StartedAt: '2026-11-22T10:00:01Z',
    FinishedAt: '2026-11-22T10:00:02Z',
  },
  HostConfig: {},
  Mounts: [],
});

describe('event hub, first subscriber', () => {
  it('reports a container created while the first list was under way', async () => {
    const { state, api } = fakeDocker();
    const deps = hubDeps(api);
    // a slow engine: its clock reads 200 ms later than when the subscriber came, and by then
    // a container created 100 ms after the subscriber is already in the list
    api.info = async () => {
      await new Promise((r) => setTimeout(r, 200));
      return { SystemTime: iso(BASE + 0.2 * SEC) };
    };
    state.list = [{ Id: 'p1', State: 'created', Labels: podLabels }];
    state.onSubscribe = (s) => emit(s, 'p1', 'create', BASE + 0.1 * SEC, podLabels);
    const hub = createEventHub(deps);
    const sub = hub.subscribe();
    try {
      await until(() => sub.queue.length === 1, 'the create event');
      expect(sub.queue[0]).toMatchObject({ container_id: 'p1', container_event_type: 'CONTAINER_CREATED_EVENT' });
    } finally {
      hub.close();
    }
  });
});

describe('event hub across a docker restart', () => {
  it('emits what changed while disconnected, before live events, without replayed duplicates', async () => {
    const fake = fakeDocker();
    const { state } = fake;
    const { hub, sub, seen, afterRestart } = await subscribedHub(fake, [
      { Id: 'p1', State: 'running', Labels: podLabels },
      { Id: 'c1', State: 'running', Labels: ctrLabels },
      { Id: 'c2', State: 'running', Labels: ctrLabels },
    ]);
    try {
      state.now = BASE + 10 * SEC;
      emit(state.streams[0], 'c2', 'die', BASE + 5 * SEC, ctrLabels);
      await until(() => seen().length === 1, 'the live event');

      // dockerd restarts: c1 and the sandbox die, c1 is removed, nothing of it is replayed
      state.list = [
        { Id: 'p1', State: 'exited', Labels: podLabels },
        { Id: 'c2', State: 'exited', Labels: ctrLabels },
      ];
      state.now = BASE + 20 * SEC;
      state.onSubscribe = (s) => {
        // the restarted engine replays the sandbox's die (already in the list) and reports a new container
        emit(s, 'p1', 'die', BASE + 15 * SEC, podLabels);
        emit(s, 'c3', 'create', BASE + 30 * SEC, ctrLabels);
      };
      expect(await afterRestart(5)).toEqual([
        'c2:CONTAINER_STOPPED_EVENT',
        'c1:CONTAINER_STOPPED_EVENT',
        'c1:CONTAINER_DELETED_EVENT',
        'p1:CONTAINER_STOPPED_EVENT',
        'c3:CONTAINER_CREATED_EVENT',
      ]);
      expect(sub.queue[3].created_at).toBe(String(BASE + 20 * SEC));
    } finally {
      hub.close();
    }
  });

  it('delivers, once and in order, the replayed events of a container that came and went while disconnected', async () => {
    const fake = fakeDocker();
    const { state } = fake;
    const { hub, afterRestart } = await subscribedHub(fake, [{ Id: 'p1', State: 'running', Labels: podLabels }]);
    try {
      // dockerd restarts; before crishim lists it again, a container is made, run and removed by hand:
      // the list cannot show it, only the restarted engine's buffer can
      state.list = [{ Id: 'p1', State: 'exited', Labels: podLabels }];
      state.now = BASE + 20 * SEC;
      state.onSubscribe = (s) => {
        emit(s, 'p1', 'die', BASE + 10 * SEC, podLabels);
        for (const [i, action] of ['create', 'start', 'die', 'destroy'].entries())
          emit(s, 'c4', action, BASE + 12 * SEC + i, ctrLabels);
      };
      expect(await afterRestart(5)).toEqual([
        'p1:CONTAINER_STOPPED_EVENT',
        'c4:CONTAINER_CREATED_EVENT',
        'c4:CONTAINER_STARTED_EVENT',
        'c4:CONTAINER_STOPPED_EVENT',
        'c4:CONTAINER_DELETED_EVENT',
      ]);
    } finally {
      hub.close();
    }
  });

  it("delivers the DELETED of a container that came and went while disconnected, stamped during the reconnect's list", async () => {
    const fake = fakeDocker();
    const { state, api } = fake;
    const { hub, afterRestart } = await subscribedHub(fake, [{ Id: 'p1', State: 'running', Labels: podLabels }]);
    try {
      // the reconnect reads the engine's clock before and after its list: 20 s and 20.005 s. c4 was
      // made and run while the stream was down and removed between the two readings, so the list
      // does not show it and its destroy is stamped after the first reading
      const clock = [BASE + 20 * SEC, BASE + 20 * SEC + 5_000_000];
      api.info = async () => ({ SystemTime: iso(clock.shift() ?? BASE + 21 * SEC) });
      state.list = [{ Id: 'p1', State: 'running', Labels: podLabels }];
      state.onSubscribe = (s) => {
        for (const [i, action] of ['create', 'start', 'die'].entries())
          emit(s, 'c4', action, BASE + 12 * SEC + i, ctrLabels);
        emit(s, 'c4', 'destroy', BASE + 20 * SEC + 2_000_000, ctrLabels);
      };
      expect(await afterRestart(3)).toEqual([
        'c4:CONTAINER_CREATED_EVENT',
        'c4:CONTAINER_STARTED_EVENT',
        'c4:CONTAINER_STOPPED_EVENT',
        'c4:CONTAINER_DELETED_EVENT',
      ]);
    } finally {
      hub.close();
    }
  });

  it('delivers the STOPPED of a die stamped before the reconnect read the clock that its list did not show yet', async () => {
    const fake = fakeDocker();
    const { state } = fake;
    const { hub, afterRestart } = await subscribedHub(fake, [{ Id: 'p1', State: 'running', Labels: podLabels }]);
    try {
      // dockerd restarts (p1 dies with it); a new sandbox p2 is made and started, then stopped just
      // before the reconnect reads the engine's clock (20 s). dockerd stamps a die before its list
      // shows the exit, so the list still says p2 is running: only the replayed die tells of it
      state.list = [
        { Id: 'p1', State: 'exited', Labels: podLabels },
        { Id: 'p2', State: 'running', Labels: podLabels },
      ];
      state.now = BASE + 20 * SEC;
      state.onSubscribe = (s) => {
        emit(s, 'p2', 'create', BASE + 12 * SEC, podLabels);
        emit(s, 'p2', 'start', BASE + 13 * SEC, podLabels);
        emit(s, 'p2', 'die', BASE + 20 * SEC - 2_000_000, podLabels);
        emit(s, 'p2', 'destroy', BASE + 21 * SEC, podLabels);
      };
      expect(await afterRestart(5)).toEqual([
        'p1:CONTAINER_STOPPED_EVENT',
        'p2:CONTAINER_CREATED_EVENT',
        'p2:CONTAINER_STARTED_EVENT',
        'p2:CONTAINER_STOPPED_EVENT',
        'p2:CONTAINER_DELETED_EVENT',
      ]);
    } finally {
      hub.close();
    }
  });

  it('waits for Docker to be back before converting an event, rather than report no statuses', async () => {
    const fake = fakeDocker();
    const { state, api } = fake;
    const c1 = exitedC1();
    let down = false;
    const refused = (): Error =>
      Object.assign(new Error('connect ECONNREFUSED /var/run/docker.sock'), { code: 'ECONNREFUSED' });
    const list = api.listContainers;
    api.listContainers = async (...args) => {
      if (down) throw refused();
      return list.apply(api, args);
    };
    api.findContainer = async (id: string) => {
      if (down) throw refused();
      return id === 'c1' ? (c1 as unknown as Awaited<ReturnType<typeof api.findContainer>>) : undefined;
    };
    const { hub, sub } = await subscribedHub(fake, [{ Id: 'c1', State: 'running', Labels: ctrLabels }]);
    try {
      // the engine goes away with the die of c1 still to be converted, and comes back a little later
      down = true;
      emit(state.streams[0], 'c1', 'die', BASE + SEC, ctrLabels);
      await new Promise((r) => setTimeout(r, 400));
      expect(sub.queue).toEqual([]);
      down = false;
      await until(() => sub.queue.length === 1, 'the stopped event');
      expect(sub.queue[0].container_event_type).toBe('CONTAINER_STOPPED_EVENT');
      expect((sub.queue[0].containers_statuses ?? []).map((c) => `${c.id}:${c.state}`)).toEqual([
        'c1:CONTAINER_EXITED',
      ]);
    } finally {
      hub.close();
    }
  });

  it('does not report twice a change the reconnect list showed whose event dockerd stamped after the list', async () => {
    const fake = fakeDocker();
    const { state } = fake;
    const { hub, afterRestart } = await subscribedHub(fake, [{ Id: 'p1', State: 'running', Labels: podLabels }]);
    try {
      // after the restart the list already shows c5 created by hand, but its create event carries a
      // stamp later than the engine time read after the list; then c5 is started for real
      state.list = [
        { Id: 'p1', State: 'running', Labels: podLabels },
        { Id: 'c5', State: 'created', Labels: ctrLabels },
      ];
      state.now = BASE + 20 * SEC;
      state.onSubscribe = (s) => {
        emit(s, 'c5', 'create', BASE + 20 * SEC + 1000, ctrLabels);
        emit(s, 'c5', 'start', BASE + 21 * SEC, ctrLabels);
      };
      expect(await afterRestart(2)).toEqual(['c5:CONTAINER_CREATED_EVENT', 'c5:CONTAINER_STARTED_EVENT']);
    } finally {
      hub.close();
    }
  });

  it('shows the change of an event the view has not heard yet on its own stream', async () => {
    const fake = fakeDocker();
    const { c1, view } = await viewOfRunningC1(fake);
    const { hub, sub } = await subscribedHub(fake, fake.state.list, view);
    try {
      Object.assign(c1.State, { Status: 'exited', Running: false });
      emit(fake.state.streams[0], 'c1', 'die', BASE + SEC, ctrLabels);
      await until(() => sub.queue.length === 1, 'the stopped event');
      expect((sub.queue[0].containers_statuses ?? []).map((c) => `${c.id}:${c.state}`)).toEqual([
        'c1:CONTAINER_EXITED',
      ]);
    } finally {
      hub.close();
      view.close();
    }
  });

  it('leaves the view to its own lists: a DELETED inferred at a reconnect drops nothing from it', async () => {
    const fake = fakeDocker();
    const { view } = await viewOfRunningC1(fake);
    const { hub, afterRestart } = await subscribedHub(fake, fake.state.list, view);
    try {
      // the reconnect's list no longer shows c1, while inspect still finds it
      fake.state.list = [];
      expect(await afterRestart(2)).toEqual(['c1:CONTAINER_STOPPED_EVENT', 'c1:CONTAINER_DELETED_EVENT']);
      expect((await view.get('c1'))?.State.Status).toBe('running');
    } finally {
      hub.close();
      view.close();
    }
  });
});
