import type { CreateOptions, DockerEngine, NameConflictPolicy } from '../docker/engine';
import type * as Docker from '../docker/types';

/** Calls after whose answer (success or failure) inspect of the container may say something else. */
const CHANGING_CALLS = ['startContainer', 'stopContainer', 'killContainer', 'removeContainer', 'updateContainer'] as const;

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
function withRemovalReport(policy: NameConflictPolicy | undefined, onChange: (ref: string) => void): NameConflictPolicy | undefined {
  if (policy?.kind !== 'reclaim') return policy;
  return {
    ...policy,
    onRemoved: (holderId) => {
      onChange(holderId);
      policy.onRemoved?.(holderId);
    },
  };
}

// Transitional: the dial-level watcher the daemon uses until it wires observeMutations.
import type { DialCallback, Dialer, DialOptions, DockerApi } from '../docker/client';

/** Container endpoints (POST /containers/{ref}/<action>) whose success or failure may change what inspect says. */
const CHANGING_ACTIONS = new Set(['start', 'stop', 'restart', 'kill', 'pause', 'unpause', 'update', 'rename', 'wait']);


/**
 * The container a Docker request may have changed: the `{ref}` of a changing
 * container endpoint or a DELETE, or undefined. `/containers/create` is
 * reported by its answer (see watchContainerMutations).
 */
export function mutatedRef(method: string, path: string): string | undefined {
  const m = /^\/containers\/([^/?]+)(?:\/([a-z]+))?\??/.exec(path);
  if (!m) return undefined;
  const [, ref, action] = m;
  if (ref === 'create' || ref === 'json' || ref === 'prune') return undefined;
  if (method === 'DELETE' && action === undefined) return ref;
  if (method === 'POST' && action !== undefined && CHANGING_ACTIONS.has(action)) return decodeURIComponent(ref);
  return undefined;
}

/**
 * Tells `onChange` about every container crishim's own Docker requests create,
 * change or remove, before the caller sees the answer: whatever a handler does
 * next (and the kubelet's next List) already finds the view marked stale.
 * Wraps docker-modem's single entry point, as the metrics instrumentation does.
 */
export function watchContainerMutations(api: DockerApi, onChange: (ref: string) => void): void {
  const modem = api.modem as unknown as Dialer;
  const dial = modem.dial.bind(modem);
  modem.dial = (options: DialOptions, callback: DialCallback): unknown => {
    // docker-modem prefixes the API version onto options.path while dialing: read it first
    const method = options.method ?? 'GET';
    const path = options.path ?? '';
    const ref = mutatedRef(method, path);
    const creates = method === 'POST' && path.startsWith('/containers/create');
    if (!ref && !creates) return dial(options, callback);
    return dial(options, (err: unknown, result?: unknown) => {
      try {
        if (ref) onChange(ref);
        const created = (result as { Id?: unknown } | undefined)?.Id;
        if (creates && !err && typeof created === 'string') onChange(created);
      } finally {
        callback(err, result);
      }
    });
  };
}
