import { engineNowNano, followDockerEvents, type DockerEvent, type EventSource } from '../docker/events';
import { DomainError } from '../errors';
import { isDockerUnreachable } from '../docker/errors';
import type { RuntimeRes } from '../server/rpc';
import { shortId } from '../logging/logger';
import type { ServiceDeps } from '../service-deps';
import { statusFromInspect } from '../container/status';
import { SANDBOX_ID_LABEL, TYPE_LABEL, TYPE_SANDBOX } from '../labels';
import { findSandbox } from '../sandbox/lookup';
import { sandboxStatusOf } from '../sandbox/status';
import { sandboxMembers } from '../sandbox/members';
import { findAnyContainer } from '../state/lookup';
import { applyAction, diffSnapshots, snapshotOf, type Snapshot } from './snapshot';

type CriEvent = RuntimeRes<'GetContainerEvents'>;
type EventType =
  'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';

/** Docker actions that are CRI lifecycle events; the rest (attach, exec, ...) are not. */
const EVENT_TYPES: Record<string, EventType> = {
  create: 'CONTAINER_CREATED_EVENT',
  start: 'CONTAINER_STARTED_EVENT',
  die: 'CONTAINER_STOPPED_EVENT',
  destroy: 'CONTAINER_DELETED_EVENT',
};

/** Where a container is in the lifecycle the CRI events describe. */
/** A subscriber that falls this far behind is ended with an error rather than silently dropped. */
const MAX_BACKLOG = 10_000;
/**
 * A conversion that cannot read the pod's statuses because Docker is away (an event of the old
 * engine still queued when it stopped) waits for it, up to CONVERT_RETRIES x CONVERT_RETRY_MS,
 * rather than report no statuses: the kubelet would read that as the pod's containers gone.
 */
const CONVERT_RETRY_MS = 250;
const CONVERT_RETRIES = 120;
const isUnreachable = (err: unknown): boolean =>
  isDockerUnreachable(err) || (err instanceof DomainError && err.kind === 'unavailable');
/** Passes an error on when Docker is unreachable (the conversion is retried), else answers `fallback`. */
const unlessUnreachable =
  <T>(fallback: T) =>
  (err: unknown): T => {
    if (isUnreachable(err)) throw err;
    return fallback;
  };

interface Subscriber {
  queue: CriEvent[];
  wake?: () => void;
  failed?: DomainError;
}

export interface EventHub {
  subscribe(): Subscriber;
  unsubscribe(s: Subscriber): void;
  close(): void;
}

/** `inferred`: made up from a reconnect's list, not sent by Docker (see resync below). */
async function toCriEvent(deps: ServiceDeps, ev: DockerEvent, type: EventType, inferred: boolean): Promise<CriEvent> {
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
  // the view's own stream may not have brought it this event yet: the reads below must show it. An
  // inferred one is no news to the view, which lists and inspects Docker again itself after a
  // reconnect; and what a list no longer shows is no removal the view should take on trust
  if (!inferred) deps.state?.heard(ev);
  const rec = await findSandbox(deps, sandboxId).catch(unlessUnreachable(undefined));
  if (rec) out.pod_sandbox_status = await sandboxStatusOf(deps, rec).catch(unlessUnreachable(null));
  const members = await sandboxMembers(deps, sandboxId).catch(unlessUnreachable([]));
  const statuses = await Promise.all(
    members.map((m) =>
      findAnyContainer(deps, m.Id)
        .then((info) => (info ? statusFromInspect(info) : undefined))
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
  let closed = false;
  // what the last list showed, kept current by live events; diffed after a reconnect
  let snapshot: Snapshot | undefined;
  // engine times around that list: events up to `listedFrom` are in it, those up to `listedTo` may be
  // (but for a die: see `lateDie`)
  let listedFrom = 0;
  let listedTo = 0;
  // after a reconnect: containers whose die up to `listedFrom` the list did not show yet. dockerd
  // stamps a die before it records the exit where its list reads it (it cleans the container up in
  // between, milliseconds): such a die is new, and so is the rest of that container's replay
  let lateDie = new Set<string>();
  // after a reconnect: whether a container was in neither the snapshot before it nor the list.
  // Such a container lived and went while no stream was live (created and removed behind our
  // back during a Docker restart): no diff shows it, so its replayed events are all there is
  let unlisted: ((id: string) => boolean) | undefined;
  // containers the last reconnect's diff reported: dockerd may stamp an event after the list showed
  // its effect (and after `listedTo`), so an event that changes nothing for them is that same change
  let synthesized = new Set<string>();
  // our clock when the first subscriber came: the first subscription starts there, not at the list
  let firstSubscriberAt = 0;

  const publish = (ev: CriEvent): void => {
    for (const s of subscribers) {
      if (s.failed) continue;
      if (s.queue.length >= MAX_BACKLOG) {
        s.failed = new DomainError('resource-exhausted', `event subscriber fell ${MAX_BACKLOG} events behind`);
      } else {
        s.queue.push(ev);
      }
      s.wake?.();
    }
  };

  const enqueue = (ev: DockerEvent, type: EventType, inferred = false): void => {
    if (subscribers.size === 0) return;
    // conversions inspect Docker; chaining keeps the delivery order Docker gave us
    chain = chain.then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          publish(await toCriEvent(deps, ev, type, inferred));
          return;
        } catch (err) {
          if (isUnreachable(err) && attempt < CONVERT_RETRIES && !closed) {
            await new Promise((r) => setTimeout(r, CONVERT_RETRY_MS));
            continue;
          }
          deps.logger.warn('cannot convert docker event', {
            containerId: shortId(ev.Actor.ID),
            error: (err as Error).message,
          });
          // Docker stayed away: the event without statuses, rather than no event
          if (isUnreachable(err) && !closed)
            publish({
              container_id: ev.Actor.ID,
              container_event_type: type,
              created_at: String(ev.timeNano),
              pod_sandbox_status: null,
              containers_statuses: [],
            });
          return;
        }
      }
    });
  };

  /**
   * False for a replayed event whose effect the last list already showed (it was synthesized then).
   * Exact replays of delivered events never get here (followDockerEvents drops them).
   */
  const isNew = (ev: DockerEvent): boolean => {
    if (!snapshot) return true;
    const id = ev.Actor.ID;
    if (ev.timeNano && ev.timeNano <= listedFrom) {
      if (ev.Action === 'die' && snapshot.get(id)?.phase === 'running') lateDie.add(id);
      if (!unlisted?.(id) && !lateDie.has(id)) return false;
      // tracked from here on: its destroy may be stamped inside the list's window, after `listedFrom`,
      // where only a change to the snapshot tells a new event from one the list already showed
      applyAction(snapshot, id, ev.Action, ev.Actor.Attributes ?? {});
      return true;
    }
    const changed = applyAction(snapshot, id, ev.Action, ev.Actor.Attributes ?? {});
    return changed || !ev.timeNano || (ev.timeNano > listedTo && !synthesized.has(id));
  };

  const onDockerEvent = (ev: DockerEvent): void => {
    const type = EVENT_TYPES[ev.Action];
    if (!type || !isNew(ev)) return;
    enqueue(ev, type);
  };

  /**
   * Lists our containers before each subscription; after a reconnect, emits what changed unseen.
   * The first time it answers the engine time the first subscriber came at (the engine's clock
   * less the time elapsed on ours since then, so never later): a container created while the
   * first list was under way is reported, not taken as already known.
   */
  const resync = async (reconnect: boolean): Promise<number> => {
    const from = await engineNowNano(deps.docker);
    const fromLocal = Date.now();
    const listed = await deps.docker.listContainers({ label: [TYPE_LABEL] });
    const to = await engineNowNano(deps.docker);
    const next = snapshotOf(listed);
    if (!reconnect) {
      // nothing to diff against: the list is only the baseline of the next reconnect's diff
      snapshot = next;
      listedFrom = listedTo = from - Math.max(0, fromLocal - firstSubscriberAt) * 1e6;
      return listedFrom;
    }
    const missed = snapshot ? diffSnapshots(snapshot, next) : [];
    if (snapshot) {
      const before = new Set(snapshot.keys());
      const listedIds = new Set(next.keys());
      unlisted = (id) => !before.has(id) && !listedIds.has(id);
    }
    snapshot = next;
    lateDie = new Set();
    synthesized = new Set(missed.map((m) => m.id));
    listedFrom = from;
    listedTo = to;
    if (missed.length > 0)
      deps.logger.info('emitting container events missed while docker was unreachable', { count: missed.length });
    for (const m of missed) {
      deps.logger.debug('synthesized container event', { containerId: shortId(m.id), action: m.action });
      const ev: DockerEvent = {
        Type: 'container',
        Action: m.action,
        Actor: { ID: m.id, Attributes: m.labels },
        time: Math.floor(from / 1e9),
        timeNano: from,
      };
      enqueue(ev, EVENT_TYPES[m.action], true);
    }
    return from;
  };

  return {
    subscribe() {
      if (!source) firstSubscriberAt = Date.now();
      source ??= followDockerEvents(
        deps.docker,
        // only the actions CRI events report: exec probes' events stay in dockerd
        { type: ['container'], label: [TYPE_LABEL], event: Object.keys(EVENT_TYPES) },
        onDockerEvent,
        deps.logger,
        { beforeSubscribe: resync },
      );
      const s: Subscriber = { queue: [] };
      subscribers.add(s);
      return s;
    },
    unsubscribe(s) {
      subscribers.delete(s);
    },
    close() {
      closed = true;
      source?.close();
      source = undefined;
      for (const s of subscribers) {
        s.failed = new DomainError('unavailable', 'crishim is shutting down');
        s.wake?.();
      }
    },
  };
}
