import { PassThrough } from 'stream';
import * as winston from 'winston';
import { DockerUnreachableError } from '../../src/docker/errors';
import type * as Docker from '../../src/docker/types';
import { createStateStore, type StateStore } from '../../src/state/store';
import { brought, HeardOnce, wasBrought } from '../../src/state/docker-events';
import type { DockerEvent } from '../../src/docker/events';
import { ExecExits } from '../../src/docker/exec-exits';
import { execDieEvent, FakeEngine, inspectInfo } from '../support/fake-engine';

const TYPE = 'io.kubernetes.docker.type';
const hex = (c: string): string => c.repeat(64);

interface FakeContainer {
  id: string;
  state: 'created' | 'running' | 'exited';
  labels: Record<string, string>;
}

/**
 * The shared fake, with this test's controls: availability, a gate that holds inspect
 * answers (as Docker knew the container when the request arrived), and raw event streams.
 */
function fakeDocker() {
  const api = new FakeEngine();
  let down = false;
  let eventsDown = false;
  let inspectGate: Promise<void> | undefined;
  const unreachable = (): Error => new DockerUnreachableError('inspect: docker daemon unreachable (ECONNREFUSED)');
  api.fail('listContainers', () => (down ? unreachable() : undefined));
  api.fail('events', () => (down || eventsDown ? unreachable() : undefined));
  const find = api.findContainer.bind(api);
  api.findContainer = async (ref: string) => {
    const answer = await find(ref);
    if (inspectGate) await inspectGate;
    if (down) throw unreachable();
    return answer;
  };
  const setState = (info: Docker.ContainerInspectInfo, state: FakeContainer['state']): void => {
    Object.assign(info.State, { Status: state, Running: state === 'running', Pid: state === 'running' ? 42 : 0 });
  };
  const containers = {
    get: (id: string): { state: FakeContainer['state'] } | undefined => {
      const c = api.containers.get(id);
      if (!c) return undefined;
      return {
        get state() {
          return c.info.State.Status as FakeContainer['state'];
        },
        set state(v: FakeContainer['state']) {
          setState(c.info, v);
        },
      };
    },
    set: (id: string, c: FakeContainer): void => {
      const info = inspectInfo({
        Id: id,
        Name: `/${id.slice(0, 6)}`,
        Created: '2026-11-23T10:00:00.5Z',
        Image: 'sha256:abc',
        Config: { Image: 'busybox', Labels: { ...c.labels } },
      });
      setState(info, c.state);
      api.addContainer(info);
    },
    delete: (id: string): boolean => api.containers.delete(id),
  };
  return {
    api,
    containers,
    get streams(): PassThrough[] {
      return api.eventSubscriptions.map((s) => s.stream);
    },
    calls: {
      get list(): number {
        return api.count('listContainers');
      },
      get inspect(): number {
        return api.count('findContainer') + api.count('inspectContainer');
      },
    },
    add(id: string, state: FakeContainer['state'], type = 'container'): void {
      containers.set(id, { id, state, labels: { [TYPE]: type } });
    },
    /** An event of `id` as Docker would send it; `timeNano` tells two of the same kind apart. */
    event(id: string, action: string, timeNano = Date.now() * 1e6): DockerEvent {
      const labels = api.containers.get(id)?.info.Config.Labels ?? { [TYPE]: 'container' };
      return { Type: 'container', Action: action, Actor: { ID: id, Attributes: labels }, time: 1, timeNano };
    },
    /** Sends an event (or `action` of `id`, now) down the last subscription. */
    emit(id: string | DockerEvent, action = ''): void {
      const subs = api.eventSubscriptions;
      const ev = typeof id === 'string' ? this.event(id, action) : id;
      subs[subs.length - 1].stream.write(JSON.stringify(ev) + '\n');
    },
    setDown(v: boolean): void {
      down = v;
    },
    setEventsDown(v: boolean): void {
      eventsDown = v;
    },
    gate(): () => void {
      let open!: () => void;
      inspectGate = new Promise((r) => (open = r));
      return () => {
        inspectGate = undefined;
        open();
      };
    },
  };
}

const logger = winston.createLogger({ silent: true });

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const states = async (store: StateStore): Promise<Record<string, string>> =>
  Object.fromEntries((await store.list()).map((c) => [c.Id.slice(0, 1), c.State.Status]));

/** A store over `d` with no periodic resync, loaded and following `d`'s events. */
async function followingStore(d: ReturnType<typeof fakeDocker>): Promise<StateStore> {
  const s = createStateStore(d.api, logger, { resyncMs: 0 });
  await s.list();
  await until(() => d.streams.length === 1, 'the subscription');
  return s;
}

/** Sends `actions` of container `id` and waits until the store has read them, and a moment for what they set off. */
async function emitRead(d: ReturnType<typeof fakeDocker>, id: string, ...actions: string[]): Promise<void> {
  for (const action of actions) d.emit(id, action);
  await until(() => d.streams[0].readableLength === 0, 'the events to be read');
  await new Promise((r) => setTimeout(r, 50));
}

describe('state store', () => {
  let store: StateStore | undefined;
  afterEach(() => store?.close());

  it('loads our containers once, then answers List and Status with no Docker call', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running', 'podsandbox');
    d.add(hex('b'), 'exited');
    d.containers.set(hex('c'), { id: hex('c'), state: 'running', labels: {} }); // not a CRI container
    store = createStateStore(d.api, logger, { resyncMs: 0 });
    expect(await states(store)).toEqual({ a: 'running', b: 'exited' });
    const before = { ...d.calls };
    for (let i = 0; i < 10; i++) await store.list();
    expect((await store.get(hex('b')))?.State.Status).toBe('exited');
    expect((await store.get('bbbb'))?.Id).toBe(hex('b'));
    expect(d.calls).toEqual(before);
  });

  it('applies events by re-inspecting: out-of-order and repeated events still end at Docker’s state', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = await followingStore(d);
    // behind crishim's back: a dies, b is created and started, then a is removed
    d.containers.get(hex('a'))!.state = 'exited';
    d.add(hex('b'), 'running');
    d.emit(hex('b'), 'start');
    d.emit(hex('a'), 'die');
    d.emit(hex('b'), 'create'); // arrives after its start
    d.emit(hex('b'), 'start'); // a replay
    await until(async () => (await store!.list()).length === 2, 'b to appear');
    expect(await states(store)).toEqual({ a: 'exited', b: 'running' });
    d.containers.delete(hex('a'));
    d.emit(hex('a'), 'destroy');
    await until(async () => (await store!.list()).length === 1, 'a to go');
    expect(await store.get(hex('a'))).toBeUndefined();
    // an exec is no reason to inspect
    const inspects = d.calls.inspect;
    d.emit(hex('b'), 'exec_start: sh');
    await new Promise((r) => setTimeout(r, 50));
    await store.list();
    expect(d.calls.inspect).toBe(inspects);
  });

  it('inspects a container once for a burst of events, at the next read', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = await followingStore(d);
    const inspects = d.calls.inspect;
    // a stop behind crishim's back: Docker's kill, die and stop events
    d.containers.get(hex('a'))!.state = 'exited';
    await emitRead(d, hex('a'), 'kill', 'die', 'stop');
    expect(d.calls.inspect).toBe(inspects);
    expect(await states(store)).toEqual({ a: 'exited' });
    expect(d.calls.inspect).toBe(inspects + 1);
  });

  it('re-inspects at once what crishim itself changed, before any read asks', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0 });
    await store.list();
    const inspects = d.calls.inspect;
    d.containers.get(hex('a'))!.state = 'exited';
    store.reinspect(hex('a'));
    await until(() => d.calls.inspect === inspects + 1, 'the inspect');
    expect(await states(store)).toEqual({ a: 'exited' });
    expect(d.calls.inspect).toBe(inspects + 1);
  });

  it('takes the events crishim’s own call brought as seen by its re-inspect, and no others', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'created');
    store = await followingStore(d);
    const inspects = d.calls.inspect;
    d.containers.get(hex('a'))!.state = 'running';
    store.reinspect(hex('a'), ['start']);
    await until(() => d.calls.inspect === inspects + 1, 'the inspect');
    await emitRead(d, hex('a'), 'start');
    expect(await states(store)).toEqual({ a: 'running' });
    expect(d.calls.inspect).toBe(inspects + 1);
    // a signal changes nothing inspect shows; the exit it may bring was not the call's doing
    await emitRead(d, hex('a'), 'kill');
    expect(await states(store)).toEqual({ a: 'running' });
    expect(d.calls.inspect).toBe(inspects + 1);
    d.containers.get(hex('a'))!.state = 'exited';
    d.emit(hex('a'), 'die');
    await until(async () => (await states(store!)).a === 'exited', 'the die');
    expect(d.calls.inspect).toBe(inspects + 2);
  });

  it('inspects a brought kind of event again once another event came between', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = await followingStore(d);
    const inspects = d.calls.inspect;
    d.containers.get(hex('a'))!.state = 'exited';
    store.reinspect(hex('a'), ['die', 'stop']);
    await until(() => d.calls.inspect === inspects + 1, 'the inspect');
    // started behind crishim's back, seen, then dead again: that die is news
    d.containers.get(hex('a'))!.state = 'running';
    d.emit(hex('a'), 'start');
    await until(async () => (await states(store!)).a === 'running', 'the start');
    d.containers.get(hex('a'))!.state = 'exited';
    d.emit(hex('a'), 'die');
    await until(async () => (await states(store!)).a === 'exited', 'the die');
  });

  it('takes in an event both its stream and the events hub deliver once, whichever is first', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = await followingStore(d);
    const inspects = d.calls.inspect;
    // the hub got the die first: the next read shows it, and the view's own copy costs nothing
    d.containers.get(hex('a'))!.state = 'exited';
    const die = d.event(hex('a'), 'die');
    store.heard(die);
    expect(await states(store)).toEqual({ a: 'exited' });
    d.emit(die);
    await emitRead(d, hex('a'));
    expect(await states(store)).toEqual({ a: 'exited' });
    expect(d.calls.inspect).toBe(inspects + 1);
    // the view's stream first, then the hub's copy of the same start
    d.containers.get(hex('a'))!.state = 'running';
    const start = d.event(hex('a'), 'start');
    d.emit(start);
    await emitRead(d, hex('a'));
    expect(await states(store)).toEqual({ a: 'running' });
    store.heard(start);
    expect(await states(store)).toEqual({ a: 'running' });
    expect(d.calls.inspect).toBe(inspects + 2);
    // another die (another engine time) is news again
    d.containers.get(hex('a'))!.state = 'exited';
    store.heard(d.event(hex('a'), 'die', die.timeNano + 1));
    expect(await states(store)).toEqual({ a: 'exited' });
    expect(d.calls.inspect).toBe(inspects + 3);
  });

  it('waits for the second copy of a bounded number of events', () => {
    const d = fakeDocker();
    const heard = new HeardOnce(2);
    const [e1, e2, e3] = [1, 2, 3].map((t) => d.event(hex('a'), 'start', t));
    expect([heard.first(e1), heard.first(e1)]).toEqual([true, false]);
    expect([heard.first(e1), heard.first(e2), heard.first(e3)]).toEqual([true, true, true]);
    // e1 made room for e3: e3's and e2's copies are second hearings, e1's counts as a first
    expect([heard.first(e3), heard.first(e2), heard.first(e1)]).toEqual([false, false, true]);
    // no engine time: nothing to match a copy by
    const untimed = d.event(hex('a'), 'die', 0);
    expect([heard.first(untimed), heard.first(untimed)]).toEqual([true, true]);
  });

  it('counts a call’s events as brought only for a while', () => {
    expect(brought([], 0)).toBeUndefined();
    const b = brought(['die', 'stop'], 1_000)!;
    expect(wasBrought(b, 'die', 2_999)).toBe(true);
    expect(wasBrought(b, 'start', 2_999)).toBe(false);
    expect(wasBrought(b, 'die', 3_001)).toBe(false);
  });

  it('drops what crishim removed with no inspect', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'exited');
    d.add(hex('b'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0 });
    await store.list();
    const inspects = d.calls.inspect;
    d.containers.delete(hex('a'));
    store.removed(hex('a').slice(0, 12));
    expect(await states(store)).toEqual({ b: 'running' });
    expect(await store.get(hex('a'))).toBeUndefined();
    expect(d.calls.inspect).toBe(inspects);
  });

  it('drops a container at its destroy event with no inspect, nor one for a read of it; a late event costs one', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    d.add(hex('b'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0 });
    const first = await store.list();
    await until(() => d.streams.length === 1, 'the subscription');
    const inspects = d.calls.inspect;
    d.containers.delete(hex('a'));
    d.emit(hex('a'), 'destroy');
    await until(async () => (await store!.list()) !== first, 'a new array');
    expect(await states(store)).toEqual({ b: 'running' });
    expect(d.calls.inspect).toBe(inspects);
    // a Status call for it
    expect(await store.get(hex('a'))).toBeUndefined();
    expect(d.calls.inspect).toBe(inspects);
    // its die, stamped before the destroy but delivered after it
    await emitRead(d, hex('a'), 'die');
    expect(await states(store)).toEqual({ b: 'running' });
    expect(await store.get(hex('a'))).toBeUndefined();
    expect(d.calls.inspect).toBe(inspects + 1);
  });

  it('does not track a container whose destroy came while a read of it was asking Docker', async () => {
    const d = fakeDocker();
    store = await followingStore(d);
    // created behind crishim's back; its create event not here yet
    d.add(hex('a'), 'running');
    const open = d.gate();
    const read = store.get(hex('a')); // no entry: asks Docker, which answers it exists
    await until(() => d.api.count('findContainer') > 0, 'the inspect');
    d.containers.delete(hex('a'));
    await emitRead(d, hex('a'), 'destroy');
    open();
    expect((await read)?.State.Status).toBe('running'); // answered before the removal: fine
    // but the view must not keep it: Docker has no such container, and no event will say so again
    expect(await states(store)).toEqual({});
    expect(await store.get(hex('a'))).toBeUndefined();
  });

  it('tracks a container taken as removed again at its next event, should Docker still have it', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = await followingStore(d);
    store.removed(hex('a'));
    expect(await states(store)).toEqual({});
    d.containers.get(hex('a'))!.state = 'exited';
    d.emit(hex('a'), 'die');
    await until(async () => (await states(store!)).a === 'exited', 'a back, exited');
    expect((await store.get(hex('a')))?.State.Status).toBe('exited');
  });

  it('re-inspects stale containers at the periodic resync, so removed ones go with no read', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    d.add(hex('b'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 50 });
    await store.list();
    await until(() => d.streams.length === 1, 'the subscription');
    const inspects = d.calls.inspect;
    // removed behind crishim's back, and its destroy event never came
    d.containers.delete(hex('a'));
    await until(() => d.calls.inspect > inspects, 'the resync to inspect a');
    expect(await states(store)).toEqual({ b: 'running' });
    // the read found nothing stale: the resync had already dropped a
    expect(d.calls.inspect).toBe(inspects + 1);
  });

  it('answers the same array until a container changes, then a new one with the change', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0 });
    const first = await store.list();
    await until(() => d.streams.length === 1, 'the subscription');
    expect(await store.list()).toBe(first);
    // an event that changes nothing inspect shows is no reason for a new array either
    d.emit(hex('a'), 'exec_start: sh');
    await new Promise((r) => setTimeout(r, 50));
    expect(await store.list()).toBe(first);
    d.containers.get(hex('a'))!.state = 'exited';
    d.emit(hex('a'), 'die');
    await until(async () => (await store!.list()) !== first, 'a new array');
    const afterDie = await store.list();
    expect(afterDie.map((c) => c.State.Status)).toEqual(['exited']);
    expect(await store.list()).toBe(afterDie);
    d.add(hex('b'), 'running');
    d.emit(hex('b'), 'create');
    await until(async () => (await store!.list()).length === 2, 'b to appear');
    expect((await store.list()).map((c) => c.Id[0])).toEqual(['a', 'b']);
    d.containers.delete(hex('a'));
    d.emit(hex('a'), 'destroy');
    await until(async () => (await store!.list()).length === 1, 'a to go');
    expect((await store.list()).map((c) => c.Id[0])).toEqual(['b']);
  });

  it('answers a status read from before crishim’s own call while Docker holds the inspect; others wait', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'created');
    store = await followingStore(d);
    const relaxed = { beforeOwnCalls: true };
    // dockerd holds a container's inspect while its start runs, and sends the start event first
    const open = d.gate();
    const answered = store.changing(hex('a'));
    d.containers.get(hex('a'))!.state = 'running';
    await emitRead(d, hex('a'), 'start');
    expect((await store.list(relaxed)).map((c) => c.State.Status)).toEqual(['created']);
    expect((await store.get(hex('a'), relaxed))?.State.Status).toBe('created');
    let strict: string | undefined;
    const waiting = store.get(hex('a')).then((i) => (strict = i?.State.Status));
    await new Promise((r) => setTimeout(r, 50));
    expect(strict).toBeUndefined();
    // the start answers: every read now waits for its re-inspect
    answered();
    store.reinspect(hex('a'), ['start']);
    const relaxedAfter = store.list(relaxed);
    open();
    await waiting;
    expect(strict).toBe('running');
    expect((await relaxedAfter).map((c) => c.State.Status)).toEqual(['running']);
  });

  it('lets a relaxed read go when a call begins on the container whose inspect it waits for', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'created');
    store = await followingStore(d);
    const open = d.gate();
    store.reinspect(hex('a'), ['create']); // its inspect is held...
    let listed: string[] | undefined;
    const list = store.list({ beforeOwnCalls: true }).then((l) => (listed = l.map((c) => c.State.Status)));
    const got = store.get(hex('a'), { beforeOwnCalls: true });
    await new Promise((r) => setTimeout(r, 20));
    expect(listed).toBeUndefined();
    const answered = store.changing(hex('a')); // ...by the start that comes next
    await list;
    expect(listed).toEqual(['created']);
    expect((await got)?.State.Status).toBe('created');
    answered();
    open();
  });

  it('leaves a container never inspected out of a relaxed list, and a relaxed get waits for it', async () => {
    const d = fakeDocker();
    store = await followingStore(d);
    const open = d.gate();
    d.add(hex('b'), 'created');
    store.reinspect(hex('b'), ['create']); // crishim created it...
    const answered = store.changing(hex('b')); // ...and starts it at once
    expect(await store.list({ beforeOwnCalls: true })).toEqual([]);
    const got = store.get(hex('b'), { beforeOwnCalls: true });
    open();
    answered();
    expect((await got)?.Id).toBe(hex('b'));
  });

  it('passes exec exits on to whoever waits for them, and only asks Docker for them then', async () => {
    const plain = fakeDocker();
    store = createStateStore(plain.api, logger, { resyncMs: 0 });
    await store.list();
    await until(() => plain.streams.length === 1, 'the subscription');
    expect(plain.api.eventSubscriptions[0].opts.filters?.event).not.toContain('exec_die');
    store.close();

    const d = fakeDocker();
    d.add(hex('a'), 'running');
    const execExits = new ExecExits();
    store = createStateStore(d.api, logger, { resyncMs: 0, execExits });
    await store.list();
    await until(() => d.streams.length === 1, 'the subscription');
    expect(d.api.eventSubscriptions[0].opts.filters?.event).toContain('exec_die');
    const inspects = d.calls.inspect;
    d.emit(execDieEvent('e0', '0', hex('a')));
    await emitRead(d, hex('a'));
    const waited = execExits.wait('e1', 5000);
    d.emit(execDieEvent('e1', '2', hex('a')));
    await expect(waited).resolves.toBe(2);
    // an exec changes nothing the view holds
    expect(await states(store)).toEqual({ a: 'running' });
    expect(d.calls.inspect).toBe(inspects);
    // a broken stream lets a waiter go to inspect at once
    const cut = execExits.wait('e2', 60_000);
    d.streams[0].destroy();
    await expect(cut).resolves.toBeUndefined();
  });

  it('discards an inspect answer that predates a later change', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'created');
    store = createStateStore(d.api, logger, { resyncMs: 0, subscribe: false });
    await store.list();
    const open = d.gate();
    store.reinspect(hex('a')); // this inspect will answer 'created'
    d.containers.get(hex('a'))!.state = 'running';
    store.reinspect(hex('a')); // crishim started it
    const listed = store.list();
    open();
    expect((await listed).map((c) => c.State.Status)).toEqual(['running']);
  });

  it('a resync catches what no event reported, and re-inspects only what differs', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    d.add(hex('b'), 'running');
    d.add(hex('c'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0, subscribe: false });
    await store.list();
    d.containers.get(hex('a'))!.state = 'exited';
    d.containers.delete(hex('b'));
    d.add(hex('d'), 'created');
    const inspects = d.calls.inspect;
    await store.resync();
    expect(await states(store)).toEqual({ a: 'exited', c: 'running', d: 'created' });
    // a, b and d: c is unchanged
    expect(d.calls.inspect - inspects).toBe(3);
  });

  it('re-inspects a container named by a prefix it did not know, learning its id from Docker', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0, subscribe: false });
    await store.list();
    d.add(hex('e'), 'created');
    store.reinspect('eeee'); // not known yet
    await until(async () => (await store!.list()).length === 2, 'e to be tracked');
    d.containers.get(hex('e'))!.state = 'running';
    store.reinspect('eeee');
    expect((await store.get(hex('e')))?.State.Status).toBe('running');
  });

  it('fails reads while Docker is unreachable after a disconnect, and recovers', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = await followingStore(d);
    d.setDown(true);
    d.streams[0].end();
    await until(
      async () =>
        await store!.list().then(
          () => false,
          () => true,
        ),
      'reads to fail',
    );
    await expect(store.list()).rejects.toMatchObject({ kind: 'unavailable' });
    // the engine comes back without a (never started) a, and with a new one
    d.containers.delete(hex('a'));
    d.add(hex('f'), 'running');
    d.setDown(false);
    await until(async () => (await store!.list().catch(() => [])).length === 1, 'the view to resynchronise');
    expect(await states(store)).toEqual({ f: 'running' });
  });
});

describe('state store without an event stream', () => {
  it('lists Docker on every read until the stream is back, so no change goes unseen meanwhile', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    const store = createStateStore(d.api, logger, { resyncMs: 0 });
    try {
      await store.list();
      await until(() => d.streams.length === 1, 'the subscription');
      d.setEventsDown(true);
      d.streams[0].end();
      await new Promise((r) => setTimeout(r, 50));
      // behind crishim's back, with no event to tell: a is killed, b appears
      d.containers.get(hex('a'))!.state = 'exited';
      d.add(hex('b'), 'running');
      expect(await states(store)).toEqual({ a: 'exited', b: 'running' });
      d.containers.delete(hex('b'));
      expect(await states(store)).toEqual({ a: 'exited' });
      // the stream is back: reads stop listing
      d.setEventsDown(false);
      await until(() => d.streams.length === 2, 'the resubscription');
      await store.list();
      const lists = d.calls.list;
      for (let i = 0; i < 5; i++) await store.list();
      expect(d.calls.list).toBe(lists);
    } finally {
      store.close();
    }
  });
});
