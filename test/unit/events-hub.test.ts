import { PassThrough } from 'stream';
import * as winston from 'winston';
import { createEventHub } from '../../src/events/hub';
import type { ServiceDeps } from '../../src/rpc/deps';
import { SANDBOX_ID_LABEL, TYPE_CONTAINER, TYPE_LABEL, TYPE_SANDBOX } from '../../src/labels';
import type { DockerApi } from '../../src/docker/client';

const SEC = 1e9;
const BASE = Date.parse('2026-11-22T10:00:00Z') * 1e6;
const iso = (nano: number): string => new Date(Math.floor(nano / 1e6)).toISOString().replace('Z', '') + String(nano % 1e6).padStart(6, '0') + 'Z';

const podLabels = { [TYPE_LABEL]: TYPE_SANDBOX };
const ctrLabels = { [TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: 'p1' };

/** A Docker whose event streams the test feeds and ends, and whose list/clock it sets. */
function fakeDocker() {
  const state = {
    now: BASE,
    list: [] as Array<{ Id: string; State: string; Labels: Record<string, string> }>,
    streams: [] as PassThrough[],
    onSubscribe: (_s: PassThrough): void => undefined,
  };
  const api = {
    info: async () => ({ SystemTime: iso(state.now) }),
    listContainers: async () => state.list,
    getEvents: async () => {
      const s = new PassThrough();
      state.streams.push(s);
      setImmediate(() => state.onSubscribe(s));
      return s;
    },
    getContainer: () => ({ inspect: async () => Promise.reject(Object.assign(new Error('no such container'), { statusCode: 404 })) }),
  };
  return { state, api: api as unknown as DockerApi };
}

function emit(s: PassThrough, id: string, action: string, timeNano: number, labels: Record<string, string>): void {
  s.write(JSON.stringify({ Type: 'container', Action: action, Actor: { ID: id, Attributes: labels }, time: Math.floor(timeNano / SEC), timeNano }) + '\n');
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('event hub across a docker restart', () => {
  it('emits what changed while disconnected, before live events, without replayed duplicates', async () => {
    const { state, api } = fakeDocker();
    const deps = {
      docker: api,
      logger: winston.createLogger({ silent: true }),
      checkpoints: { list: async () => [], read: async () => undefined },
      config: { rootDirectory: '/nonexistent' },
    } as unknown as ServiceDeps;
    state.list = [
      { Id: 'p1', State: 'running', Labels: podLabels },
      { Id: 'c1', State: 'running', Labels: ctrLabels },
      { Id: 'c2', State: 'running', Labels: ctrLabels },
    ];
    const hub = createEventHub(deps);
    const sub = hub.subscribe();
    const seen = (): string[] => sub.queue.map((e) => `${e.container_id}:${e.container_event_type}`);
    try {
      await until(() => state.streams.length === 1, 'first subscription');
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
      state.streams[0].end();
      await until(() => seen().length >= 5, 'the synthesized and live events');
      await new Promise((r) => setTimeout(r, 200));
      expect(seen()).toEqual([
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
});
