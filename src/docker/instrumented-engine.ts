import type { DockerEngine } from './engine';
import { DockerUnreachableError } from './errors';
import { shortId, type Logger } from '../logging/logger';
import type { StallScope, StallWatch } from './stall-watch';

/**
 * The Engine API request behind each DockerEngine call, as the metrics label it, and what
 * the call means when it stays unanswered (`stall`; none for streams, pulls and disk walks,
 * which may run for as long as they like).
 */
const ROUTES: {
  [K in keyof DockerEngine]: {
    method: string;
    route: string;
    subject?: 'container' | 'exec' | 'image';
    stall?: StallScope;
    /** Time the call may rightly take beyond the stall timeout, from its arguments. */
    allowanceMs?: (args: unknown[]) => number;
  };
} = {
  inspectContainer: { method: 'GET', route: '/containers/{id}/json', subject: 'container', stall: 'engine' },
  findContainer: { method: 'GET', route: '/containers/{id}/json', subject: 'container', stall: 'engine' },
  listContainers: { method: 'GET', route: '/containers/json', stall: 'engine' },
  createContainer: { method: 'POST', route: '/containers/create', stall: 'engine' },
  startContainer: { method: 'POST', route: '/containers/{id}/start', subject: 'container', stall: 'object' },
  stopContainer: {
    method: 'POST',
    route: '/containers/{id}/stop',
    subject: 'container',
    stall: 'object',
    // Docker waits out the grace period before it kills the process
    allowanceMs: (args) => Number(args[1]) * 1000 || 0,
  },
  killContainer: { method: 'POST', route: '/containers/{id}/kill', subject: 'container', stall: 'object' },
  removeContainer: { method: 'DELETE', route: '/containers/{id}', subject: 'container', stall: 'object' },
  updateContainer: { method: 'POST', route: '/containers/{id}/update', subject: 'container', stall: 'object' },
  containerLogs: { method: 'GET', route: '/containers/{id}/logs', subject: 'container', stall: 'object' },
  followContainerLogs: { method: 'GET', route: '/containers/{id}/logs', subject: 'container' },
  attachContainer: { method: 'POST', route: '/containers/{id}/attach', subject: 'container' },
  resizeContainer: { method: 'POST', route: '/containers/{id}/resize', subject: 'container', stall: 'object' },
  createExec: { method: 'POST', route: '/containers/{id}/exec', subject: 'container', stall: 'engine' },
  startExec: { method: 'POST', route: '/exec/{id}/start', subject: 'exec' },
  inspectExec: { method: 'GET', route: '/exec/{id}/json', subject: 'exec', stall: 'engine' },
  resizeExec: { method: 'POST', route: '/exec/{id}/resize', subject: 'exec', stall: 'object' },
  inspectImage: { method: 'GET', route: '/images/{id}/json', subject: 'image', stall: 'engine' },
  listImages: { method: 'GET', route: '/images/json', stall: 'engine' },
  pullImage: { method: 'POST', route: '/images/create', subject: 'image' },
  removeImage: { method: 'DELETE', route: '/images/{id}', subject: 'image', stall: 'object' },
  imageDistribution: { method: 'GET', route: '/distribution/{id}/json', subject: 'image' },
  imageLayersSize: { method: 'GET', route: '/system/df' },
  events: { method: 'GET', route: '/events' },
  ping: { method: 'GET', route: '/_ping', stall: 'engine' },
  info: { method: 'GET', route: '/info', stall: 'engine' },
  version: { method: 'GET', route: '/version', stall: 'engine' },
};

export interface EngineObserver {
  /** Each call as the Engine API request it stands for, with its duration and failure. */
  onRequest?(method: string, route: string, seconds: number, err: unknown): void;
  /** A call found dockerd unreachable (so Status can say RuntimeReady=false at once). */
  onUnreachable?(err: DockerUnreachableError): void;
  /** Times the calls that should answer promptly, so a hung dockerd is named. */
  stalls?: StallWatch;
}

/** The log fields naming the object a call is about (`containerId` on every line concerning one). */
function subjectFields(subject: 'container' | 'exec' | 'image' | undefined, args: unknown[]): Record<string, string> {
  const first = args[0];
  if (!subject || typeof first !== 'string') return {};
  if (subject === 'container') return { containerId: shortId(first) };
  return subject === 'exec' ? { execId: shortId(first) } : { image: first };
}

/**
 * Wraps any DockerEngine: times every call for the metrics, logs it at debug level with
 * the object it concerns, and reports unreachable-daemon failures. Decorating keeps the
 * engine itself (and the fake the tests use) free of metrics and logging concerns.
 */
export function instrumentEngine(inner: DockerEngine, logger: Logger, observer: EngineObserver = {}): DockerEngine {
  const wrapped = {} as Record<keyof DockerEngine, unknown>;
  for (const name of Object.keys(ROUTES) as Array<keyof DockerEngine>) {
    const { method, route, subject, stall, allowanceMs } = ROUTES[name];
    const fn = inner[name] as (...args: unknown[]) => Promise<unknown>;
    wrapped[name] = async (...args: unknown[]): Promise<unknown> => {
      const t0 = process.hrtime.bigint();
      const answered =
        stall && observer.stalls?.begin(name, stall, subjectFields(subject, args), allowanceMs?.(args) ?? 0);
      let failure: unknown;
      try {
        return await fn.apply(inner, args);
      } catch (err) {
        failure = err;
        throw err;
      } finally {
        answered?.();
        const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
        observer.onRequest?.(method, route, seconds, failure);
        if (failure instanceof DockerUnreachableError) observer.onUnreachable?.(failure);
        if (logger.isDebugEnabled()) {
          const fields = { ...subjectFields(subject, args), seconds: Math.round(seconds * 1e4) / 1e4 };
          if (failure) logger.debug(`docker ${name} failed`, { ...fields, error: (failure as Error).message });
          else logger.debug(`docker ${name}`, fields);
        }
      }
    };
  }
  return wrapped as unknown as DockerEngine;
}
