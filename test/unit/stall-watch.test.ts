import * as winston from 'winston';
import { createEngineInfo } from '../../src/docker/engine-info';
import type { DockerEngine } from '../../src/docker/engine';
import { instrumentEngine } from '../../src/docker/instrumented-engine';
import { createStallWatch, describeStall, type StallWatch } from '../../src/docker/stall-watch';
import type { Logger } from '../../src/logging/logger';
import { describeState } from '../../src/readiness/readiness';
import { FakeEngine, inspectInfo } from '../support/fake-engine';

function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      lines.push(`${level} ${msg} ${JSON.stringify(fields)}`);
  const logger = { warn: at('warn'), info: at('info'), debug: () => undefined, isDebugEnabled: () => false };
  return { logger: logger as unknown as Logger, lines };
}

describe('stall watch', () => {
  let watch: StallWatch | undefined;
  afterEach(() => watch?.close());

  it('names the longest-waiting engine call past the timeout, logs it once, and its late answer', () => {
    let t = 1_000_000;
    const { logger, lines } = recordingLogger();
    watch = createStallWatch({ timeoutMs: 180_000, logger, now: () => t });
    const ping = watch.begin('ping', 'engine', {});
    t += 60_000;
    const inspect = watch.begin('inspectContainer', 'engine', { containerId: 'abc123' });
    t += 119_999;
    expect(watch.stalled()).toBeUndefined();
    expect(watch.oldestWaitMs()).toBe(179_999);
    t += 1;
    expect(watch.stalled()).toEqual({ call: 'ping', fields: {}, waitedMs: 180_000 });
    watch.check();
    watch.check();
    expect(lines).toEqual([
      'warn docker ping has not answered for 180 s; Status reports RuntimeReady=false until it answers {"inFlight":2}',
    ]);
    t += 60_000;
    ping();
    expect(watch.stalled()).toEqual({ call: 'inspectContainer', fields: { containerId: 'abc123' }, waitedMs: 180_000 });
    expect(lines[1]).toBe('info docker ping answered after 240 s {}');
    watch.check();
    expect(lines[2]).toMatch(/^warn docker inspectContainer has not answered for 180 s; .*"containerId":"abc123"/);
    expect(watch.oldestWaitMs()).toBe(180_000);
    inspect();
    expect(watch.stalled()).toBeUndefined();
    expect(watch.oldestWaitMs()).toBe(0);
    expect(lines).toHaveLength(4);
  });

  it('gives a call its allowance, and logs but never reports a stuck object', () => {
    let t = 0;
    const { logger, lines } = recordingLogger();
    watch = createStallWatch({ timeoutMs: 10_000, logger, now: () => t });
    const stop = watch.begin('stopContainer', 'object', { containerId: 'c1' }, 30_000);
    const create = watch.begin('createContainer', 'engine', {}, 0);
    t = 10_000;
    watch.check();
    expect(watch.stalled()?.call).toBe('createContainer');
    create();
    expect(watch.oldestWaitMs()).toBe(0);
    t = 39_999;
    watch.check();
    expect(lines.filter((l) => l.includes('stopContainer'))).toEqual([]);
    t = 40_000;
    watch.check();
    expect(lines.filter((l) => l.includes('stopContainer'))).toEqual([
      'warn docker stopContainer has not answered for 40 s; that object may be stuck {"containerId":"c1","inFlight":1}',
    ]);
    expect(watch.stalled()).toBeUndefined();
    stop();
  });

  it('watches nothing with a timeout of 0', () => {
    let t = 0;
    const { logger, lines } = recordingLogger();
    watch = createStallWatch({ timeoutMs: 0, logger, now: () => t });
    watch.begin('ping', 'engine', {});
    t = 1e9;
    watch.check();
    expect(watch.stalled()).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it('says which call and object hang', () => {
    expect(describeStall({ call: 'removeContainer', fields: { containerId: 'abc' }, waitedMs: 181_400 })).toBe(
      'docker removeContainer (abc) has not answered for 181 s: dockerd may be hung',
    );
  });
});

describe('stall watch behind the instrumented engine', () => {
  /** `fake`, with the calls in `own` answered by those functions instead (a call that never answers, one answered later). */
  function overriding(
    fake: FakeEngine,
    own: Partial<Record<keyof DockerEngine, () => Promise<unknown>>>,
  ): DockerEngine {
    return new Proxy(fake, {
      get: (target, prop, receiver) =>
        own[prop as keyof DockerEngine] ?? (Reflect.get(target, prop, receiver) as unknown),
    }) as DockerEngine;
  }
  const never = (): Promise<never> => new Promise(() => undefined);

  it('times prompt calls with their object, gives a stop its grace, and leaves streams alone', async () => {
    const begun: string[] = [];
    const stalls: StallWatch = {
      begin: (call, scope, fields, allowanceMs) => {
        begun.push(`${call} ${scope} ${JSON.stringify(fields)} ${allowanceMs}`);
        return () => begun.push(`${call} ended`);
      },
      stalled: () => undefined,
      oldestWaitMs: () => 0,
      check: () => undefined,
      close: () => undefined,
    };
    const fake = new FakeEngine();
    const engine = overriding(fake, { inspectImage: never, pullImage: never });
    const id = fake.addContainer(inspectInfo());
    const wrapped = instrumentEngine(engine, winston.createLogger({ silent: true }), { stalls });
    await wrapped.inspectContainer(id);
    await wrapped.stopContainer(id, 30);
    void wrapped.inspectImage('busybox:latest');
    void wrapped.pullImage('busybox:latest', {});
    await new Promise((r) => setImmediate(r));
    expect(begun).toEqual([
      `inspectContainer engine {"containerId":"${id.slice(0, 12)}"} 0`,
      'inspectContainer ended',
      `stopContainer object {"containerId":"${id.slice(0, 12)}"} 30000`,
      'stopContainer ended',
      'inspectImage engine {"image":"busybox:latest"} 0',
    ]);
  });

  it('turns a hung ping into an unresponsive engine for Status and systemd, and back once it answers', async () => {
    let t = 0;
    let answerPing = (): void => undefined;
    const slowPing = overriding(new FakeEngine(), {
      ping: () => new Promise<void>((resolve) => (answerPing = resolve)),
    });
    const { logger, lines } = recordingLogger();
    const watch = createStallWatch({ timeoutMs: 5_000, logger, now: () => t });
    const wrapped = instrumentEngine(slowPing, winston.createLogger({ silent: true }), { stalls: watch });
    const info = createEngineInfo(wrapped, winston.createLogger({ silent: true }), {
      intervalMs: 3_600_000,
      stalls: watch,
    });
    const net = { ready: true, reason: '', message: '' };
    try {
      // a ping to a hung dockerd neither answers nor fails: without the watch all looks well
      const probe = info.refresh();
      expect(info.current().unresponsive).toBeUndefined();
      t = 5_000;
      watch.check();
      const hung = info.current();
      expect(hung.unresponsive).toBe('docker ping has not answered for 5 s: dockerd may be hung');
      expect(describeState({ ...hung, reachable: true }, net, '', '/s.sock')).toEqual({
        ready: false,
        status: hung.unresponsive,
      });
      t = 7_000;
      answerPing();
      await probe;
      expect(info.current().reachable).toBe(true);
      expect(info.current().unresponsive).toBeUndefined();
      expect(describeState(info.current(), net, '', '/s.sock').ready).toBe(true);
      expect(lines).toEqual([
        'warn docker ping has not answered for 5 s; Status reports RuntimeReady=false until it answers {"inFlight":1}',
        'info docker ping answered after 7 s {}',
      ]);
    } finally {
      watch.close();
      info.close();
    }
  });
});
