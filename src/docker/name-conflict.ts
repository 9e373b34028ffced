import { DomainError } from '../errors';
import type { NameConflictPolicy } from './engine';
import { DockerError } from './errors';
import type * as Docker from './types';

/** Docker's answer when a create names a container that exists already (HTTP 409). */
export class NameTakenError extends DockerError {
  constructor(
    readonly containerName: string,
    detail: string,
    what?: string,
    cause?: unknown,
  ) {
    super('failed-precondition', detail, what, cause);
    this.name = 'NameTakenError';
  }
}

/** What applying a conflict policy needs from an engine. */
export interface CreateSteps {
  /** One create attempt; a taken name rejects with NameTakenError. */
  create(spec: Docker.ContainerCreateOptions): Promise<string>;
  find(ref: string): Promise<Docker.ContainerInspectInfo | undefined>;
  /** Removes a leftover (with its anonymous volumes); a missing one is fine. */
  remove(id: string): Promise<void>;
}

/**
 * Creates `spec` and, when its name is taken, does what `policy` says. Shared by every
 * DockerEngine implementation so the rules are the same whoever creates and wherever.
 */
export async function createWithPolicy(
  steps: CreateSteps,
  spec: Docker.ContainerCreateOptions,
  policy: NameConflictPolicy,
): Promise<string> {
  try {
    return await steps.create(spec);
  } catch (err) {
    if (!(err instanceof NameTakenError) || !spec.name) throw err;
  }
  const name = spec.name;
  if (policy.kind === 'suffix') {
    const renamed = policy.rename(name);
    policy.onRetry?.(renamed);
    return steps.create({ ...spec, name: renamed });
  }
  const holder = await steps.find(name).catch(() => undefined);
  // gone again between the conflict and the inspect: the name is free
  if (!holder) return steps.create(spec);
  if (policy.kind === 'reclaim' && policy.isLeftover(holder)) {
    policy.onReclaim?.(holder);
    try {
      await steps.remove(holder.Id);
      policy.onRemoved?.(holder.Id);
      return await steps.create(spec);
    } catch (err) {
      // a removal already in progress (409) or someone else took the name again: report the holder
      if (!(err instanceof DomainError && err.kind === 'failed-precondition')) throw err;
    }
  }
  throw new DomainError('already-exists', `name ${JSON.stringify(name)} is reserved for ${holder.Id}`);
}
