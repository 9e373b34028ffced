import { status as grpcStatus } from '@grpc/grpc-js';
import { followDockerEvents, type DockerEvent, type EventSource } from '../docker/events';
import { CriError } from '../server/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { shortId } from '../logging/logger';
import type { ServiceDeps } from './deps';
import { statusFromInspect } from './container-status';
import { SANDBOX_ID_LABEL, TYPE_LABEL, TYPE_SANDBOX } from './labels';
import { findSandbox } from './sandbox-lookup';
import { sandboxStatusOf } from './sandbox-status';
import { sandboxMembers } from './sandbox-stop';

type CriEvent = RuntimeRes<'GetContainerEvents'>;
type EventType = 'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';

/** Docker actions that are CRI lifecycle events; the rest (attach, exec, ...) are not. */
const EVENT_TYPES: Record<string, EventType> = {
  create: 'CONTAINER_CREATED_EVENT',
  start: 'CONTAINER_STARTED_EVENT',
  die: 'CONTAINER_STOPPED_EVENT',
  destroy: 'CONTAINER_DELETED_EVENT',
};

/** A subscriber that falls this far behind is ended with an error rather than silently dropped. */
const MAX_BACKLOG = 10_000;

interface Subscriber {
  queue: CriEvent[];
  wake?: () => void;
  failed?: CriError;
}

export interface EventHub {
  subscribe(): Subscriber;
  unsubscribe(s: Subscriber): void;
  close(): void;
}

async function toCriEvent(deps: ServiceDeps, ev: DockerEvent, type: EventType): Promise<CriEvent> {
  const labels = ev.Actor.Attributes;
  const isSandbox = labels[TYPE_LABEL] === TYPE_SANDBOX;
  const sandboxId = isSandbox ? ev.Actor.ID : (labels[SANDBOX_ID_LABEL] ?? '');
  const out: CriEvent = {
    container_id: ev.Actor.ID,
    container_event_type: type,
    created_at: String(ev.timeNano),
    pod_sandbox_status: null,
    containers_statuses: [],
  };
  if (!sandboxId) return out;
  const rec = await findSandbox(deps, sandboxId).catch(() => undefined);
  if (rec) out.pod_sandbox_status = await sandboxStatusOf(deps, rec).catch(() => null);
  const members = await sandboxMembers(deps, sandboxId).catch(() => []);
  const statuses = await Promise.all(
    members.map((m) =>
      deps.docker
        .getContainer(m.Id)
        .inspect()
        .then(statusFromInspect)
        .catch(() => undefined),
    ),
  );
  out.containers_statuses = statuses.filter((s) => s !== undefined);
  return out;
}

/** One Docker subscription fanned out to every GetContainerEvents caller, in order. */
export function createEventHub(deps: ServiceDeps): EventHub {
  const subscribers = new Set<Subscriber>();
  let source: EventSource | undefined;
  let chain: Promise<void> = Promise.resolve();

  const publish = (ev: CriEvent): void => {
    for (const s of subscribers) {
      if (s.failed) continue;
      if (s.queue.length >= MAX_BACKLOG) {
        s.failed = new CriError(grpcStatus.RESOURCE_EXHAUSTED, `event subscriber fell ${MAX_BACKLOG} events behind`);
      } else {
        s.queue.push(ev);
      }
      s.wake?.();
    }
  };

  const onDockerEvent = (ev: DockerEvent): void => {
    const type = EVENT_TYPES[ev.Action];
    if (!type || subscribers.size === 0) return;
    // conversions inspect Docker; chaining keeps the delivery order Docker gave us
    chain = chain.then(async () => {
      try {
        publish(await toCriEvent(deps, ev, type));
      } catch (err) {
        deps.logger.warn('cannot convert docker event', { containerId: shortId(ev.Actor.ID), error: (err as Error).message });
      }
    });
  };

  return {
    subscribe() {
      source ??= followDockerEvents(deps.docker, TYPE_LABEL, onDockerEvent, deps.logger);
      const s: Subscriber = { queue: [] };
      subscribers.add(s);
      return s;
    },
    unsubscribe(s) {
      subscribers.delete(s);
    },
    close() {
      source?.close();
      source = undefined;
      for (const s of subscribers) {
        s.failed = new CriError(grpcStatus.UNAVAILABLE, 'crishim is shutting down');
        s.wake?.();
      }
    },
  };
}

export function getContainerEvents(hub: EventHub) {
  return async (_req: RuntimeReq<'GetContainerEvents'>, ctx: CallContext, send: (ev: CriEvent) => Promise<void>): Promise<void> => {
    const sub = hub.subscribe();
    const onAbort = (): void => sub.wake?.();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!ctx.signal.aborted) {
        if (sub.failed) throw sub.failed;
        const next = sub.queue.shift();
        if (next) {
          await send(next);
          continue;
        }
        await new Promise<void>((resolve) => {
          sub.wake = resolve;
          if (ctx.signal.aborted || sub.queue.length > 0 || sub.failed) resolve();
        });
        sub.wake = undefined;
      }
    } finally {
      ctx.signal.removeEventListener('abort', onAbort);
      hub.unsubscribe(sub);
    }
  };
}
