import type { CreateOptions, DockerEngine, NameConflictPolicy } from '../docker/engine';
import type * as Docker from '../docker/types';

/** Calls after whose answer (success or failure) inspect of the container may say something else. */
const CHANGING_CALLS = [
  'startContainer',
  'stopContainer',
  'killContainer',
  'removeContainer',
  'updateContainer',
] as const;

/**
 * Tells `onChange` about every container crishim's own Docker calls create, change or
 * remove, before the caller sees the answer: whatever a handler does next (and the
 * kubelet's next List) already finds the view marked stale. A decorator of the engine,
 * like the instrumentation, so neither the engine nor its callers know about the view.
 */
export function observeMutations(inner: DockerEngine, onChange: (ref: string) => void): DockerEngine {
  const outer: DockerEngine = Object.create(inner) as DockerEngine;
  for (const name of CHANGING_CALLS) {
    const fn = inner[name] as (id: string, ...rest: unknown[]) => Promise<void>;
    (outer as unknown as Record<string, unknown>)[name] = (id: string, ...rest: unknown[]): Promise<void> =>
      fn.call(inner, id, ...rest).finally(() => onChange(id));
  }
  outer.createContainer = async (spec: Docker.ContainerCreateOptions, opts: CreateOptions = {}): Promise<string> => {
    const id = await inner.createContainer(spec, { ...opts, onConflict: withRemovalReport(opts.onConflict, onChange) });
    onChange(id);
    return id;
  };
  return outer;
}

/** A reclaimed leftover is removed inside the engine's create: report its removal too. */
function withRemovalReport(
  policy: NameConflictPolicy | undefined,
  onChange: (ref: string) => void,
): NameConflictPolicy | undefined {
  if (policy?.kind !== 'reclaim') return policy;
  return {
    ...policy,
    onRemoved: (holderId) => {
      onChange(holderId);
      policy.onRemoved?.(holderId);
    },
  };
}
