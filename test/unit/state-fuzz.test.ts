import { PassThrough } from 'stream';
import * as winston from 'winston';
import type { DockerEngine } from '../../src/docker/engine';
import type { DockerEvent } from '../../src/docker/events';
import { DockerUnreachableError } from '../../src/docker/errors';
import { createStateStore } from '../../src/state/store';
import { observeMutations } from '../../src/state/mutations';
import { inspectInfo } from '../support/fake-engine';

const TYPE = 'io.kubernetes.docker.type';
const logger = winston.createLogger({ silent: true });

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

/** A small dockerd: random latencies, state read at a random point of the call, ordered but delayed events, `since` replays. */
function sim(rand: () => number) {
  const containers = new Map<string, { state: string; labels: Record<string, string> }>();
  let log: DockerEvent[] = [];
  let clock = Date.now() * 1e6;
  let down = false;
  let n = 0;
  const subs = new Set<{ stream: PassThrough; chain: Promise<void> }>();
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const lat = () => sleep(Math.floor(rand() * 4));
  const unreachable = () => new DockerUnreachableError('docker daemon unreachable (ECONNREFUSED)');
  const deliver = (s: { stream: PassThrough; chain: Promise<void> }, ev: DockerEvent) => {
    s.chain = s.chain.then(async () => {
      await sleep(Math.floor(rand() * 6));
      if (!s.stream.writableEnded) s.stream.write(JSON.stringify(ev) + '\n');
    });
  };
  const emit = (id: string, action: string) => {
    clock += 1 + Math.floor(rand() * 3e8);
    const ev: DockerEvent = {
      Type: 'container',
      Action: action,
      Actor: { ID: id, Attributes: { ...(containers.get(id)?.labels ?? { [TYPE]: 'container' }) } },
      time: Math.floor(clock / 1e9),
      timeNano: clock,
    };
    log.push(ev);
    for (const s of subs) deliver(s, ev);
  };
  const info = (id: string) => {
    const c = containers.get(id);
    if (!c) return undefined;
    const i = inspectInfo({ Id: id, Name: `/n${id.slice(0, 8)}`, Config: { Labels: { ...c.labels } } });
    Object.assign(i.State, { Status: c.state, Running: c.state === 'running', Pid: c.state === 'running' ? 4 : 0 });
    return i;
  };
  /** Reads the state before or after a latency, as Docker may serve a request anywhere in its round trip. */
  const read = async <T>(f: () => T): Promise<T> => {
    await lat();
    if (down) throw unreachable();
    const v = f();
    await lat();
    if (down) throw unreachable();
    return v;
  };
  const engine = {
    findContainer: (ref: string) => read(() => info(ref)),
    inspectContainer: (ref: string) => read(() => info(ref)),
    listContainers: () =>
      read(() => [...containers].map(([Id, c]) => ({ Id, State: c.state, Labels: { ...c.labels }, Names: [] }))),
    info: async () => ({ SystemTime: new Date(clock / 1e6).toISOString() }),
    events: async (opts: { since?: string }) => {
      await lat();
      if (down) throw unreachable();
      const s = { stream: new PassThrough(), chain: Promise.resolve() };
      const since = opts.since ? Number(opts.since) * 1e9 : Infinity;
      for (const ev of log) if (ev.timeNano >= since) deliver(s, ev);
      subs.add(s);
      s.stream.on('close', () => subs.delete(s));
      return s.stream;
    },
    createContainer: async (spec: { Labels?: Record<string, string> }) => {
      await lat();
      if (down) throw unreachable();
      const id =
        (++n).toString(16).padStart(4, '0') +
        Math.floor(rand() * 2 ** 48)
          .toString(16)
          .padStart(12, '0');
      const full = id.repeat(4);
      containers.set(full, { state: 'created', labels: { [TYPE]: 'container', ...spec.Labels } });
      emit(full, 'create');
      await lat();
      return full;
    },
    startContainer: async (id: string) => {
      await lat();
      if (down) throw unreachable();
      const c = containers.get(id);
      if (!c) throw Object.assign(new Error('no such container'), { statusCode: 404 });
      c.state = 'running';
      emit(id, 'start');
      await lat();
    },
    stopContainer: async (id: string) => {
      await lat();
      const c = containers.get(id);
      if (c?.state === 'running') {
        c.state = 'exited';
        emit(id, 'die');
        emit(id, 'stop');
      }
      await lat();
    },
    removeContainer: async (id: string) => {
      await lat();
      if (containers.delete(id)) emit(id, 'destroy');
      await lat();
    },
    killContainer: async (id: string) => {
      const c = containers.get(id);
      if (c?.state === 'running') {
        c.state = 'exited';
        emit(id, 'die');
      } else if (c) {
        c.state = 'running';
        emit(id, 'start');
      }
    },
    updateContainer: async () => undefined,
  };
  return {
    engine: engine as unknown as DockerEngine,
    containers,
    /** Ends every stream; `restart` also empties dockerd's event buffer and kills what runs. */
    async drop(restart: boolean) {
      for (const s of subs) s.stream.end();
      subs.clear();
      if (!restart) return;
      down = true;
      for (const [id, c] of containers)
        if (c.state === 'running') {
          c.state = 'exited';
          emit(id, 'die');
        }
      log = [];
      await sleep(50 + rand() * 300);
      down = false;
    },
    hub(onEvent: (ev: DockerEvent) => void) {
      // the events hub's own subscription: it hands Docker's events to the view late, in order
      const s = { stream: new PassThrough(), chain: Promise.resolve() };
      subs.add(s);
      let buf = '';
      let chain = Promise.resolve();
      s.stream.on('data', (b: Buffer) => {
        buf += b.toString();
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const ev = JSON.parse(buf.slice(0, nl)) as DockerEvent;
          buf = buf.slice(nl + 1);
          chain = chain.then(async () => {
            await sleep(Math.floor(rand() * 20));
            onEvent(ev);
          });
        }
      });
    },
  };
}

async function scenario(seed: number): Promise<string[]> {
  const rand = rng(seed);
  const d = sim(rand);
  const store = createStateStore(d.engine, logger, { resyncMs: 37 });
  const docker = observeMutations(d.engine, {
    changing: (ref) => store.changing(ref),
    changed: (ref, brings) => store.reinspect(ref, brings),
    removed: (ref) => store.removed(ref),
  });
  d.hub((ev) => store.heard(ev));
  const problems: string[] = [];
  const kept: string[] = [];
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  let stop = false;
  const pods = async (w: number) => {
    for (let i = 0; i < 12 && !stop; i++) {
      try {
        const id = await docker.createContainer({ Labels: { [TYPE]: 'podsandbox' } } as never);
        await docker.startContainer(id);
        const info = await store.get(id);
        if (!info) problems.push(`seed ${seed} w${w}: just started ${id.slice(0, 16)} not found`);
        if (rand() < 0.5) kept.push(id);
        else {
          await sleep(rand() * 20);
          if (rand() < 0.5) await docker.stopContainer(id, 0);
          else await d.engine.stopContainer(id, 0); // behind crishim's back
          if (rand() < 0.5) await docker.removeContainer(id, { force: true });
          else await d.engine.removeContainer(id);
        }
      } catch (err) {
        if (!(err instanceof DockerUnreachableError) && !(err as { kind?: string }).kind) throw err;
      }
    }
  };
  const reader = async () => {
    while (!stop) {
      await sleep(rand() * 5);
      const snapshot = [...kept];
      for (const id of snapshot) {
        const alive = d.containers.has(id);
        try {
          const info = await store.get(id, { beforeOwnCalls: rand() < 0.5 });
          if (!info && alive && d.containers.has(id))
            problems.push(
              `seed ${seed}: get(${id.slice(0, 16)}) undefined, Docker has it ${d.containers.get(id)?.state}`,
            );
        } catch {
          /* unreachable */
        }
      }
      if (rand() < 0.3) await store.list({ beforeOwnCalls: rand() < 0.5 }).catch(() => undefined);
    }
  };
  const chaos = async () => {
    while (!stop) {
      await sleep(100 + rand() * 400);
      for (const id of kept) if (rand() < 0.3) await d.engine.killContainer(id); // behind crishim's back
      if (rand() < 0.7) await d.drop(rand() < 0.5);
    }
  };
  const work = Promise.all([pods(1), pods(2), pods(3), pods(4)]);
  const others = [reader(), reader(), chaos()];
  await work;
  await sleep(500);
  stop = true;
  await Promise.all(others);
  store.close();
  return problems;
}

describe('state store under random interleavings', () => {
  it('never answers undefined for a container Docker has', async () => {
    const from = Number(process.env.FUZZ_FROM ?? 1);
    const count = Number(process.env.FUZZ_SEEDS ?? 5);
    const all: string[] = [];
    for (let seed = from; seed < from + count; seed++) all.push(...(await scenario(seed)));
    expect(all).toEqual([]);
  }, 600_000);
});
