import { PassThrough } from 'stream';
import * as winston from 'winston';
import type { DockerApi } from '../../src/docker/client';
import { createStateStore, type StateStore } from '../../src/state/store';
import { mutatedRef } from '../../src/state/mutations';

const TYPE = 'io.kubernetes.docker.type';
const hex = (c: string): string => c.repeat(64);

interface FakeContainer {
  id: string;
  state: 'created' | 'running' | 'exited';
  labels: Record<string, string>;
}

/** A Docker whose containers, event streams and availability the test controls; it counts the calls it answers. */
function fakeDocker() {
  const containers = new Map<string, FakeContainer>();
  const streams: PassThrough[] = [];
  const calls = { list: 0, inspect: 0 };
  let down = false;
  let eventsDown = false;
  let inspectGate: Promise<void> | undefined;
  const unreachable = (): Error => Object.assign(new Error('connect ECONNREFUSED /var/run/docker.sock'), { code: 'ECONNREFUSED' });
  const inspectOf = (c: FakeContainer) => ({
    Id: c.id,
    Name: `/${c.id.slice(0, 6)}`,
    Created: '2026-11-23T10:00:00.5Z',
    Image: 'sha256:abc',
    State: { Status: c.state, Running: c.state === 'running', Pid: c.state === 'running' ? 42 : 0 },
    Config: { Image: 'busybox', Labels: { ...c.labels } },
  });
  const api = {
    listContainers: async () => {
      calls.list++;
      if (down) throw unreachable();
      return [...containers.values()].filter((c) => c.labels[TYPE]).map((c) => ({ Id: c.id, State: c.state, Labels: c.labels }));
    },
    getContainer: (ref: string) => ({
      inspect: async () => {
        calls.inspect++;
        // what Docker knows when the request arrives, answered once the gate opens
        const found = [...containers.values()].find((c) => c.id === ref || c.id.startsWith(ref));
        const answer = found ? inspectOf(found) : undefined;
        if (inspectGate) await inspectGate;
        if (down) throw unreachable();
        if (!answer) throw Object.assign(new Error(`no such container: ${ref}`), { statusCode: 404 });
        return answer;
      },
    }),
    getEvents: async () => {
      if (down || eventsDown) throw unreachable();
      const s = new PassThrough();
      streams.push(s);
      return s;
    },
  };
  return {
    api: api as unknown as DockerApi,
    containers,
    streams,
    calls,
    add(id: string, state: FakeContainer['state'], type = 'container'): void {
      containers.set(id, { id, state, labels: { [TYPE]: type } });
    },
    emit(id: string, action: string): void {
      const c = containers.get(id);
      streams[streams.length - 1].write(
        JSON.stringify({ Type: 'container', Action: action, Actor: { ID: id, Attributes: c?.labels ?? { [TYPE]: 'container' } }, time: 1, timeNano: Date.now() * 1e6 }) + '\n',
      );
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
    store = createStateStore(d.api, logger, { resyncMs: 0 });
    await store.list();
    await until(() => d.streams.length === 1, 'the subscription');
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

  it('discards an inspect answer that predates a later invalidation', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'created');
    store = createStateStore(d.api, logger, { resyncMs: 0, subscribe: false });
    await store.list();
    const open = d.gate();
    store.invalidate(hex('a')); // this inspect will answer 'created'
    d.containers.get(hex('a'))!.state = 'running';
    store.invalidate(hex('a')); // crishim started it
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

  it('marks a container by name or prefix stale, learning its id from Docker', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0, subscribe: false });
    await store.list();
    d.add(hex('e'), 'created');
    store.invalidate('eeee'); // not known yet
    await until(async () => (await store!.list()).length === 2, 'e to be tracked');
    d.containers.get(hex('e'))!.state = 'running';
    store.invalidate('eeee');
    expect((await store.get(hex('e')))?.State.Status).toBe('running');
  });

  it('fails reads while Docker is unreachable after a disconnect, and recovers', async () => {
    const d = fakeDocker();
    d.add(hex('a'), 'running');
    store = createStateStore(d.api, logger, { resyncMs: 0 });
    await store.list();
    await until(() => d.streams.length === 1, 'the subscription');
    d.setDown(true);
    d.streams[0].end();
    await until(async () => (await store!.list().then(() => false, () => true)), 'reads to fail');
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

describe('mutatedRef', () => {
  it('names the container a changing request targets, and nothing for reads and execs', () => {
    expect(mutatedRef('POST', '/containers/abc/start?')).toBe('abc');
    expect(mutatedRef('POST', '/containers/abc/stop?t=10')).toBe('abc');
    expect(mutatedRef('DELETE', '/containers/abc?force=true')).toBe('abc');
    expect(mutatedRef('POST', '/containers/abc/update')).toBe('abc');
    expect(mutatedRef('GET', '/containers/abc/json?')).toBeUndefined();
    expect(mutatedRef('POST', '/containers/abc/exec')).toBeUndefined();
    expect(mutatedRef('POST', '/containers/abc/attach?stream=1')).toBeUndefined();
    expect(mutatedRef('POST', '/containers/create?name=x')).toBeUndefined();
    expect(mutatedRef('GET', '/containers/json?all=1')).toBeUndefined();
  });
});
