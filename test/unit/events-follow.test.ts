import { PassThrough } from 'stream';
import * as winston from 'winston';
import { createReplayFilter, followDockerEvents, type DockerEvent } from '../../src/docker/events';
import { FakeEngine } from '../support/fake-engine';

const SEC = 1e9;
const BASE = 1_790_000_000 * SEC;

function event(id: string, action: string, timeNano: number): DockerEvent {
  return {
    Type: 'container',
    Action: action,
    Actor: { ID: id, Attributes: {} },
    time: Math.floor(timeNano / SEC),
    timeNano,
  };
}

function write(s: PassThrough, ev: DockerEvent): void {
  s.write(JSON.stringify(ev) + '\n');
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('replay filter', () => {
  it('lets an event older than the newest through, and skips only an exact repeat', () => {
    const f = createReplayFilter();
    expect(f.fresh(event('a', 'create', BASE + 100_000))).toBe(true);
    // dockerd stamped this one 81 us earlier but published it later
    expect(f.fresh(event('a', 'start', BASE + 19_000))).toBe(true);
    expect(f.fresh(event('a', 'start', BASE + 19_000))).toBe(false);
    // same time, another container or action: a different event
    expect(f.fresh(event('b', 'start', BASE + 19_000))).toBe(true);
    expect(f.fresh(event('a', 'die', BASE + 19_000))).toBe(true);
  });
});

describe('followDockerEvents', () => {
  it('delivers out-of-order live events and drops only what a resubscription replays', async () => {
    const api = new FakeEngine();
    const streams = api.eventSubscriptions;
    const got: string[] = [];
    const src = followDockerEvents(
      api,
      {},
      (ev) => got.push(`${ev.Actor.ID}:${ev.Action}`),
      winston.createLogger({ silent: true }),
      { retryMs: 10 },
    );
    try {
      await until(() => streams.length === 1, 'first subscription');
      write(streams[0].stream, event('c1', 'create', BASE + 2 * SEC + 500));
      write(streams[0].stream, event('c1', 'start', BASE + 2 * SEC + 900));
      write(streams[0].stream, event('c2', 'start', BASE + 2 * SEC + 819)); // stamped earlier, arrives later
      await until(() => got.length === 3, 'three live events');
      streams[0].stream.end();
      await until(() => streams.length === 2, 'the resubscription');
      expect(streams[1].opts.since).toBe(String(Math.floor((BASE + 2 * SEC) / SEC)));
      // the engine replays the whole second, then goes on
      write(streams[1].stream, event('c1', 'create', BASE + 2 * SEC + 500));
      write(streams[1].stream, event('c2', 'start', BASE + 2 * SEC + 819));
      write(streams[1].stream, event('c1', 'start', BASE + 2 * SEC + 900));
      write(streams[1].stream, event('c1', 'die', BASE + 3 * SEC));
      await until(() => got.length >= 4, 'the new event');
      await new Promise((r) => setTimeout(r, 50));
      expect(got).toEqual(['c1:create', 'c1:start', 'c2:start', 'c1:die']);
    } finally {
      src.close();
    }
  });

  it('skips events the caller listed before the first subscription', async () => {
    const api = new FakeEngine();
    const streams = api.eventSubscriptions;
    const got: string[] = [];
    const src = followDockerEvents(api, {}, (ev) => got.push(ev.Action), winston.createLogger({ silent: true }), {
      beforeSubscribe: async () => BASE + 5 * SEC,
    });
    try {
      await until(() => streams.length === 1, 'subscription');
      write(streams[0].stream, event('c1', 'create', BASE + 4 * SEC));
      write(streams[0].stream, event('c1', 'start', BASE + 6 * SEC));
      await until(() => got.length === 1, 'the live event');
      expect(got).toEqual(['start']);
    } finally {
      src.close();
    }
  });
});
