import type { CreateOptions, DockerEngine, NameConflictPolicy, RemoveOptions } from '../docker/engine';
import type * as Docker from '../docker/types';

/** What crishim's own Docker calls did to a container, told before the caller sees the answer. */
export interface MutationListener {
  /** A call on `ref` goes to Docker; the returned function is called at its answer, before `changed`. */
  changing(ref: string): () => void;
  /** `ref` may have changed; `brings` are the events the call made Docker send (none when it failed). */
  changed(ref: string, brings: readonly string[]): void;
  /** crishim removed `ref`. */
  removed(ref: string): void;
}

/**
 * Calls after whose answer (success or failure) inspect of the container may say something else,
 * each with the state-changing events dockerd 20.10+ sends before it answers a success: a stop
 * waits for the exit. A kill may carry a signal the process outlives, so its die is not counted
 * on; an update is inspected whatever comes, as one made behind crishim's back would look the same.
 */
const CHANGING_CALLS = {
  startContainer: ['start'],
  stopContainer: ['die', 'stop'],
  killContainer: [],
  updateContainer: [],
} as const satisfies Partial<Record<keyof DockerEngine, readonly string[]>>;

/**
 * Tells `listener` about every container crishim's own Docker calls create, change or
 * remove, before the caller sees the answer: whatever a handler does next (and the
 * kubelet's next List) already finds the view marked stale. A decorator of the engine,
 * like the instrumentation, so neither the engine nor its callers know about the view.
 */
export function observeMutations(inner: DockerEngine, listener: MutationListener): DockerEngine {
  const outer: DockerEngine = Object.create(inner) as DockerEngine;
  // a failed call brings no events: whatever came of it is inspected
  const told = async (id: string, call: () => Promise<void>, succeeded: () => void): Promise<void> => {
    const answered = listener.changing(id);
    try {
      await call();
    } catch (err) {
      answered();
      listener.changed(id, []);
      throw err;
    }
    answered();
    succeeded();
  };
  for (const [name, brings] of Object.entries(CHANGING_CALLS)) {
    const fn = inner[name as keyof typeof CHANGING_CALLS] as (id: string, ...rest: unknown[]) => Promise<void>;
    (outer as unknown as Record<string, unknown>)[name] = (id: string, ...rest: unknown[]): Promise<void> =>
      told(
        id,
        () => fn.call(inner, id, ...rest),
        () => listener.changed(id, brings),
      );
  }
  outer.removeContainer = (id: string, opts?: RemoveOptions): Promise<void> =>
    told(
      id,
      () => inner.removeContainer(id, opts),
      () => listener.removed(id),
    );
  outer.createContainer = async (spec: Docker.ContainerCreateOptions, opts: CreateOptions = {}): Promise<string> => {
    const id = await inner.createContainer(spec, { ...opts, onConflict: withRemovalReport(opts.onConflict, listener) });
    listener.changed(id, ['create']);
    return id;
  };
  return outer;
}

/** A reclaimed leftover is removed inside the engine's create: report its removal too. */
function withRemovalReport(
  policy: NameConflictPolicy | undefined,
  listener: MutationListener,
): NameConflictPolicy | undefined {
  if (policy?.kind !== 'reclaim') return policy;
  return {
    ...policy,
    onRemoved: (holderId) => {
      listener.removed(holderId);
      policy.onRemoved?.(holderId);
    },
  };
}
