import { DomainError } from '../errors';
import { ensureImage } from '../docker/images';
import type { DockerEngine } from '../docker/engine';
import type { Logger } from '../logging/logger';

/** `p`, or a rejection as soon as `signal` aborts (p goes on, for whoever else waits on it). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  const cancelled = (): DomainError => new DomainError('cancelled', 'cancelled by the client');
  if (signal.aborted) return Promise.reject(cancelled());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(cancelled());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The sandbox image's presence, checked (inspected, pulled when absent) once and then trusted
 * until Docker says it is gone. A burst of RunPodSandbox calls shares the one check in flight
 * instead of each inspecting the image. The shared check runs without any caller's signal, so
 * one client giving up does not fail the others; each caller waits under its own signal.
 */
export class SandboxImageCheck {
  private readonly checks = new Map<string, Promise<void>>();

  /** `deps.docker` is read at each check, not here: the service is built before it may be used. */
  constructor(private readonly deps: { docker: Pick<DockerEngine, 'inspectImage' | 'pullImage'> }) {}

  ensure(image: string, opts: { signal?: AbortSignal; logger: Logger }): Promise<void> {
    let check = this.checks.get(image);
    if (!check) {
      check = ensureImage(this.deps.docker, image, { logger: opts.logger });
      this.checks.set(image, check);
      // a failed check is not remembered: the next pod tries again
      check.catch(() => {
        if (this.checks.get(image) === check) this.checks.delete(image);
      });
    }
    return untilAborted(check, opts.signal);
  }

  /** Docker said the image is gone (a create answered 404): the next ensure checks again. */
  forget(image: string): void {
    this.checks.delete(image);
  }
}
