import winston from 'winston';
import type { RegistryAuth } from '../../src/docker/types';
import { pullImageRpc } from '../../src/rpc/pull-image';
import { createPullCoalescer, dockerAuth, pullKey, type Puller } from '../../src/images/pull';
import type { ServiceDeps } from '../../src/service-deps';
import { DomainError } from '../../src/errors';
import type { CallContext } from '../../src/server/rpc';
import { FakeEngine } from '../support/fake-engine';

const log = winston.createLogger({ silent: true });
const NO_AUTH = { username: '', password: '', auth: '', server_address: '', identity_token: '', registry_token: '' };

function ctx(signal: AbortSignal = new AbortController().signal): CallContext {
  return { signal, method: 'PullImage', log, annotate: () => undefined };
}

/** A puller whose pulls finish when the test says so, recording each call and its signal. */
function fakePuller() {
  const calls: Array<{
    ref: string;
    auth?: RegistryAuth;
    signal: AbortSignal;
    resolve: () => void;
    reject: (e: unknown) => void;
  }> = [];
  const puller: Puller = (ref, auth, signal) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ ref, auth, signal, resolve, reject });
      signal.addEventListener('abort', () => reject(new DomainError('cancelled', 'aborted')));
    });
  return { calls, puller };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('CRI AuthConfig -> Docker registry auth', () => {
  it('passes username/password with the image registry as serveraddress', () => {
    expect(dockerAuth(null, 'x')).toBeUndefined();
    expect(dockerAuth(NO_AUTH, 'x')).toBeUndefined();
    expect(dockerAuth({ ...NO_AUTH, username: 'u', password: 'p' }, 'reg.io/a')).toEqual({
      username: 'u',
      password: 'p',
      serveraddress: 'reg.io',
    });
    expect(dockerAuth({ ...NO_AUTH, username: 'u', password: 'p' }, 'busybox')).toEqual({
      username: 'u',
      password: 'p',
      serveraddress: 'docker.io',
    });
  });

  it('decodes auth (base64 user:pass, colons in the password kept) and honours server_address', () => {
    const b64 = Buffer.from('user:pa:ss').toString('base64');
    expect(dockerAuth({ ...NO_AUTH, auth: b64, server_address: 'https://s.io' }, 'x')).toEqual({
      username: 'user',
      password: 'pa:ss',
      serveraddress: 'https://s.io',
    });
    expect(() => dockerAuth({ ...NO_AUTH, auth: Buffer.from('nocolon').toString('base64') }, 'x')).toThrow(
      /user:password/,
    );
  });

  it('passes identity and registry tokens', () => {
    expect(dockerAuth({ ...NO_AUTH, identity_token: 'idt' }, '127.0.0.1:5000/a')).toEqual({
      identitytoken: 'idt',
      serveraddress: '127.0.0.1:5000',
    });
    expect(dockerAuth({ ...NO_AUTH, registry_token: 'rt' }, 'q.io/a')).toEqual({
      registrytoken: 'rt',
      serveraddress: 'q.io',
    });
  });

  it('keys pulls by image (however spelled) and credentials, without the secret in the key', () => {
    expect(pullKey('busybox', undefined)).toBe(pullKey('docker.io/library/busybox:latest', undefined));
    const a = pullKey('busybox', { username: 'u', password: 'secret-1' });
    expect(a).not.toBe(pullKey('busybox', { username: 'u', password: 'secret-2' }));
    expect(a).not.toBe(pullKey('busybox', undefined));
    expect(a).not.toContain('secret');
  });
});

describe('pull coalescing', () => {
  it('shares one pull between identical concurrent requests, and starts a new one afterwards', async () => {
    const f = fakePuller();
    const c = createPullCoalescer(f.puller);
    const a = c.pull('busybox:latest', undefined, new AbortController().signal, log);
    const b = c.pull('docker.io/library/busybox', undefined, new AbortController().signal, log);
    await tick();
    expect(f.calls).toHaveLength(1);
    f.calls[0].resolve();
    expect(await a).toEqual({ joined: false });
    expect(await b).toEqual({ joined: true });
    expect(c.inFlight()).toBe(0);
    const again = c.pull('busybox:latest', undefined, new AbortController().signal, log);
    await tick();
    expect(f.calls).toHaveLength(2);
    f.calls[1].resolve();
    await again;
  });

  it('does not share between different images or credentials', async () => {
    const f = fakePuller();
    const c = createPullCoalescer(f.puller);
    const s = new AbortController().signal;
    const ps = [
      c.pull('a:1', undefined, s, log),
      c.pull('a:2', undefined, s, log),
      c.pull('a:1', { username: 'u', password: 'p' }, s, log),
      c.pull('a:1', { username: 'u', password: 'q' }, s, log),
    ];
    await tick();
    expect(f.calls).toHaveLength(4);
    f.calls.forEach((call) => call.resolve());
    await Promise.all(ps);
  });

  it('gives every waiter the failure, and forgets the failed pull', async () => {
    const f = fakePuller();
    const c = createPullCoalescer(f.puller);
    const s = new AbortController().signal;
    const a = c.pull('a:1', undefined, s, log);
    const b = c.pull('a:1', undefined, s, log);
    await tick();
    f.calls[0].reject(new DomainError('unauthenticated', 'pull image a:1: unauthorized: authentication required'));
    await expect(a).rejects.toMatchObject({ kind: 'unauthenticated' });
    await expect(b).rejects.toMatchObject({ kind: 'unauthenticated', message: expect.stringMatching(/unauthorized/) });
    expect(c.inFlight()).toBe(0);
  });

  it('lets one waiter cancel without stopping the shared pull; the last one cancelling aborts it', async () => {
    const f = fakePuller();
    const c = createPullCoalescer(f.puller);
    const ca = new AbortController();
    const cb = new AbortController();
    const a = c.pull('a:1', undefined, ca.signal, log);
    const b = c.pull('a:1', undefined, cb.signal, log);
    await tick();
    ca.abort();
    await expect(a).rejects.toMatchObject({ kind: 'cancelled' });
    expect(f.calls[0].signal.aborted).toBe(false);
    cb.abort();
    await expect(b).rejects.toMatchObject({ kind: 'cancelled' });
    expect(f.calls[0].signal.aborted).toBe(true);
    expect(c.inFlight()).toBe(0);
    // a later request starts afresh instead of joining the aborted pull
    const next = c.pull('a:1', undefined, new AbortController().signal, log);
    await tick();
    expect(f.calls).toHaveLength(2);
    f.calls[1].resolve();
    await expect(next).resolves.toEqual({ joined: false });
  });

  it('refuses an already-cancelled request without pulling', async () => {
    const f = fakePuller();
    const ac = new AbortController();
    ac.abort();
    await expect(createPullCoalescer(f.puller).pull('a:1', undefined, ac.signal, log)).rejects.toMatchObject({
      kind: 'cancelled',
    });
    expect(f.calls).toHaveLength(0);
  });
});

describe('PullImage handler', () => {
  const ID = 'sha256:' + 'ab'.repeat(32);
  const docker = new FakeEngine();
  docker.addImage({ Id: ID, RepoTags: ['127.0.0.1:5000/a/b:latest'] });
  const deps = { docker } as Pick<ServiceDeps, 'docker'> as ServiceDeps;

  it('answers the image id, pulling the normalized ref with mapped auth', async () => {
    const f = fakePuller();
    const rpc = pullImageRpc(deps, createPullCoalescer(f.puller));
    const res = rpc(
      {
        image: {
          image: '127.0.0.1:5000/a/b',
          annotations: {},
          user_specified_image: '',
          runtime_handler: '',
          image_ref: '',
        },
        auth: { ...NO_AUTH, username: 'u', password: 'p' },
        sandbox_config: null,
      },
      ctx(),
    );
    await tick();
    expect(f.calls[0].ref).toBe('127.0.0.1:5000/a/b:latest');
    expect(f.calls[0].auth).toEqual({ username: 'u', password: 'p', serveraddress: '127.0.0.1:5000' });
    f.calls[0].resolve();
    await expect(res).resolves.toEqual({ image_ref: ID });
  });

  it.each(['', 'UPPER/Case::bad', 'a b'])('rejects %j as INVALID_ARGUMENT without pulling', async (image) => {
    const f = fakePuller();
    const rpc = pullImageRpc(deps, createPullCoalescer(f.puller));
    await expect(
      rpc(
        {
          image: { image, annotations: {}, user_specified_image: '', runtime_handler: '', image_ref: '' },
          auth: null,
          sandbox_config: null,
        },
        ctx(),
      ),
    ).rejects.toMatchObject({
      kind: 'invalid-argument',
    });
    expect(f.calls).toHaveLength(0);
  });
});
