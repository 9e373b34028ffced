import winston from 'winston';
import type * as Docker from '../../src/docker/types';
import { DomainError } from '../../src/errors';
import { SandboxImageCheck } from '../../src/sandbox/image-check';

const logger = winston.createLogger({ silent: true });
const PAUSE = 'registry.k8s.io/pause:3.10';

/** An engine whose image inspect answers when the test says so, counting its calls. */
function engine(present = true) {
  const calls = { inspect: 0, pull: 0 };
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  return {
    calls,
    release: () => release(),
    docker: {
      inspectImage: async (): Promise<Docker.ImageInspectInfo> => {
        calls.inspect++;
        await gate;
        if (!present) throw new DomainError('not-found', `no such image ${PAUSE}`);
        return { Id: 'sha256:' + 'ab'.repeat(32), RepoTags: [PAUSE], RepoDigests: [], Size: 1, Created: '' };
      },
      pullImage: async (): Promise<void> => {
        calls.pull++;
        present = true;
      },
    },
  };
}

describe('the sandbox image check', () => {
  it('a burst of pods shares one inspect, and later pods make none', async () => {
    const e = engine();
    const check = new SandboxImageCheck(e);
    const burst = Array.from({ length: 30 }, () => check.ensure(PAUSE, { logger }));
    e.release();
    await Promise.all(burst);
    await check.ensure(PAUSE, { logger });
    expect(e.calls).toEqual({ inspect: 1, pull: 0 });
  });

  it('an absent image is pulled once for the whole burst', async () => {
    const e = engine(false);
    const check = new SandboxImageCheck(e);
    const burst = Array.from({ length: 5 }, () => check.ensure(PAUSE, { logger }));
    e.release();
    await Promise.all(burst);
    expect(e.calls).toEqual({ inspect: 1, pull: 1 });
  });

  it('one caller giving up fails only its own wait, not the others sharing the check', async () => {
    const e = engine();
    const check = new SandboxImageCheck(e);
    const ac = new AbortController();
    const gaveUp = check.ensure(PAUSE, { logger, signal: ac.signal });
    const other = check.ensure(PAUSE, { logger });
    ac.abort();
    await expect(gaveUp).rejects.toMatchObject({ kind: 'cancelled' });
    e.release();
    await expect(other).resolves.toBeUndefined();
    expect(e.calls.inspect).toBe(1);
  });

  it('a failed check is not remembered, and forget makes the next pod check again', async () => {
    let fail = true;
    let inspects = 0;
    const check = new SandboxImageCheck({
      docker: {
        inspectImage: async () => {
          inspects++;
          if (fail) throw new DomainError('unavailable', 'docker is restarting');
          return { Id: 'sha256:' + 'ab'.repeat(32), RepoTags: [PAUSE], RepoDigests: [], Size: 1, Created: '' };
        },
        pullImage: async () => undefined,
      },
    });
    await expect(check.ensure(PAUSE, { logger })).rejects.toThrow('docker is restarting');
    fail = false;
    await check.ensure(PAUSE, { logger });
    await check.ensure(PAUSE, { logger });
    expect(inspects).toBe(2);
    check.forget(PAUSE);
    await check.ensure(PAUSE, { logger });
    expect(inspects).toBe(3);
  });
});
