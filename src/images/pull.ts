import { createHash } from 'crypto';
import { canonicalRef, pullImage, registryHost } from '../docker/images';
import type { RegistryAuth } from '../docker/types';
import type { Logger } from '../logging/logger';
import { DomainError, invalidArgument } from '../errors';
import type { ImageReq } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';

type AuthConfig = NonNullable<ImageReq<'PullImage'>['auth']>;

/**
 * CRI AuthConfig -> Docker's X-Registry-Auth; undefined when no credentials were given.
 * `auth` (base64 "user:password") is decoded when username is empty, as the kubelet's
 * keyring and containerd do; serveraddress defaults to the image's registry host.
 */
export function dockerAuth(auth: AuthConfig | null | undefined, ref: string): RegistryAuth | undefined {
  if (!auth) return undefined;
  let { username, password } = auth;
  if (!username && auth.auth) {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw invalidArgument('auth.auth must be base64 of "user:password"');
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  if (!username && !auth.identity_token && !auth.registry_token) return undefined;
  const out: RegistryAuth = { serveraddress: auth.server_address || registryHost(ref) };
  if (username) out.username = username;
  if (password) out.password = password;
  if (auth.identity_token) out.identitytoken = auth.identity_token;
  if (auth.registry_token) out.registrytoken = auth.registry_token;
  return out;
}

/** Coalescing key: the same image (however spelled) with the same credentials. Secrets only enter hashed. */
export function pullKey(ref: string, auth: RegistryAuth | undefined): string {
  const who = auth ? createHash('sha256').update(JSON.stringify(auth)).digest('hex').slice(0, 16) : 'anonymous';
  return `${canonicalRef(ref)}#${who}`;
}

/** Does one Docker pull; aborted through `signal`. */
export type Puller = (ref: string, auth: RegistryAuth | undefined, signal: AbortSignal, log: Logger) => Promise<void>;

interface InFlight {
  done: Promise<void>;
  controller: AbortController;
  waiters: number;
}

export interface PullCoalescer {
  /** Resolves when the image is pulled; `joined` says another caller's pull was reused. */
  pull(ref: string, auth: RegistryAuth | undefined, signal: AbortSignal, log: Logger): Promise<{ joined: boolean }>;
  /** Pulls under way (for tests). */
  inFlight(): number;
}

function cancelled(ref: string): DomainError {
  return new DomainError('cancelled', `pull image ${ref}: cancelled`);
}

/**
 * Identical concurrent pulls share one Docker pull: the kubelet starts one per pod that
 * needs an image, so a deployment rollout would otherwise pull the same image N times.
 * A caller that cancels only stops waiting; the shared pull is aborted when every caller has.
 */
export function createPullCoalescer(puller: Puller): PullCoalescer {
  const inflight = new Map<string, InFlight>();
  return {
    inFlight: () => inflight.size,
    async pull(ref, auth, signal, log) {
      if (signal.aborted) throw cancelled(ref);
      const key = pullKey(ref, auth);
      let entry = inflight.get(key);
      const joined = entry !== undefined;
      if (!entry) {
        const controller = new AbortController();
        const e: InFlight = { controller, waiters: 0, done: Promise.resolve() };
        e.done = puller(ref, auth, controller.signal, log).finally(() => {
          if (inflight.get(key) === e) inflight.delete(key);
        });
        // every waiter may have left already: nobody else would observe the rejection
        e.done.catch(() => undefined);
        inflight.set(key, e);
        entry = e;
      } else {
        log.debug('joining an in-flight pull', { image: ref, waiters: entry.waiters + 1 });
      }
      const e = entry;
      e.waiters += 1;
      let onAbort: (() => void) | undefined;
      try {
        await Promise.race([
          e.done,
          new Promise<never>((_, reject) => {
            onAbort = () => reject(cancelled(ref));
            signal.addEventListener('abort', onAbort, { once: true });
          }),
        ]);
        return { joined };
      } finally {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        e.waiters -= 1;
        if (e.waiters === 0 && signal.aborted && !e.controller.signal.aborted) {
          // the last one waiting gave up: stop the Docker pull, and let the next caller start afresh
          log.info('cancelling image pull: no caller waits for it any more', { image: ref });
          e.controller.abort();
          if (inflight.get(key) === e) inflight.delete(key);
        }
      }
    },
  };
}

/** The coalescer the service uses: real Docker pulls. */
export function dockerPuller(deps: Pick<ServiceDeps, 'docker'>): Puller {
  return (ref, auth, signal, log) => pullImage(deps.docker, ref, { auth, signal, logger: log });
}
