import { engineNowNano, followDockerEvents, type DockerEvent, type EventSource } from '../docker/events';
import { DomainError } from '../errors';
import type { RuntimeRes } from '../server/rpc';
import { shortId } from '../logging/logger';
import type { ServiceDeps } from '../rpc/deps';
import { statusFromInspect } from '../container/status';
import { SANDBOX_ID_LABEL, TYPE_LABEL, TYPE_SANDBOX } from '../labels';
import { findSandbox } from '../sandbox/lookup';
import { sandboxStatusOf } from '../sandbox/status';
import { sandboxMembers } from '../sandbox/members';

type CriEvent = RuntimeRes<'GetContainerEvents'>;
type EventType = 'CONTAINER_CREATED_EVENT' | 'CONTAINER_STARTED_EVENT' | 'CONTAINER_STOPPED_EVENT' | 'CONTAINER_DELETED_EVENT';

/** Docker actions that are CRI lifecycle events; the rest (attach, exec, ...) are not. */
const EVENT_TYPES: Record<string, EventType> = {
  create: 'CONTAINER_CREATED_EVENT',
  start: 'CONTAINER_STARTED_EVENT',
  die: 'CONTAINER_STOPPED_EVENT',
  destroy: 'CONTAINER_DELETED_EVENT',
};

/** Where a container is in the lifecycle the CRI events describe. */
export type Phase = 'created' | 'running' | 'exited';
type Action = 'create' | 'start' | 'die' | 'destroy';
export interface Tracked {
  phase: Phase;
  /** Only the labels an event conversion reads (type, sandbox id). */
  labels: Record<string, string>;
}
/** Container id -> phase of the containers carrying crishim's type label. */
export type Snapshot = Map<string, Tracked>;
export interface MissedEvent {
  id: string;
  action: Action;
  labels: Record<string, string>;
}

/** Docker's list `State` as a lifecycle phase: paused/restarting still count as started, removing as stopped. */
export function phaseOf(dockerState: string): Phase {
  if (dockerState === 'created') return 'created';
  if (dockerState === 'running' || dockerState === 'paused' || dockerState === 'restarting') return 'running';
  return 'exited';
}

export function snapshotOf(list: Array<{ Id: string; State: string; Labels: Record<string, string> | null }>): Snapshot {
  const out: Snapshot = new Map();
  for (const c of list) out.set(c.Id, { phase: phaseOf(c.State), labels: eventLabels(c.Labels ?? {}) });
  return out;
}

function eventLabels(labels: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of [TYPE_LABEL, SANDBOX_ID_LABEL]) if (labels[k] !== undefined) out[k] = labels[k];
  return out;
}

const isSandbox = (t: Tracked): boolean => t.labels[TYPE_LABEL] === TYPE_SANDBOX;

/** The Docker actions that lead from phase `from` (undefined: not yet created) to `to` (undefined: removed). */
function actionsBetween(from: Phase | undefined, to: Phase | undefined): Action[] {
  if (from === to) return [];
  if (to === undefined) return from === 'running' ? ['die', 'destroy'] : ['destroy'];
  const out: Action[] = from === undefined ? ['create'] : [];
  const started = from === 'running' || from === 'exited';
  if (to === 'running' && from !== 'running') out.push('start');
  if (to === 'exited' && !started) out.push('start');
  if (to === 'exited') out.push('die');
  return out;
}

/**
 * The events that would have turned `prev` into `next`, for the changes Docker's
 * event stream could not replay (a dockerd restart empties its buffer). Each
 * container's events are in lifecycle order; stops and removals come first (a
 * pod's containers before its sandbox), then creations and starts (sandboxes first).
 */
export function diffSnapshots(prev: Snapshot, next: Snapshot): MissedEvent[] {
  const down: Array<{ sandbox: boolean; events: MissedEvent[] }> = [];
  const up: Array<{ sandbox: boolean; events: MissedEvent[] }> = [];
  const add = (id: string, t: Tracked, from: Phase | undefined, to: Phase | undefined): void => {
    const events = actionsBetween(from, to).map((action) => ({ id, action, labels: t.labels }));
    if (events.length === 0) return;
    const goesDown = events[0].action === 'die' || events[0].action === 'destroy';
    (goesDown ? down : up).push({ sandbox: isSandbox(t), events });
  };
  for (const [id, t] of prev) if (!next.has(id)) add(id, t, t.phase, undefined);
  for (const [id, t] of next) add(id, t, prev.get(id)?.phase, t.phase);
  down.sort((a, b) => Number(a.sandbox) - Number(b.sandbox));
  up.sort((a, b) => Number(b.sandbox) - Number(a.sandbox));
  return [...down, ...up].flatMap((g) => g.events);
}

/**
 * Applies a live event to the snapshot; false when the snapshot already showed
 * its effect (the event was replayed from before the list it was built from).
 */
export function applyAction(snap: Snapshot, id: string, action: string, labels: Record<string, string>): boolean {
  const known = snap.get(id);
  switch (action) {
    case 'create':
      if (known) return false;
      snap.set(id, { phase: 'created', labels: eventLabels(labels) });
      return true;
    case 'destroy':
      return snap.delete(id);
    case 'start':
    case 'die': {
      const phase: Phase = action === 'start' ? 'running' : 'exited';
      // created unseen (its create fell between the list and the subscription): track it from here
      if (!known) {
        snap.set(id, { phase, labels: eventLabels(labels) });
        return true;
      }
      if (known.phase === phase) return false;
      known.phase = phase;
      return true;
    }
    default:
      return true;
  }
}

/** A subscriber that falls this far behind is ended with an error rather than silently dropped. */
const MAX_BACKLOG = 10_000;

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
  // the view may not have heard of this event yet: make it ask Docker, as the old per-event inspect did
  deps.state?.invalidate(ev.Actor.ID);
  const rec = await findSandbox(deps, sandboxId).catch(() => undefined);
  if (rec) out.pod_sandbox_status = await sandboxStatusOf(deps, rec).catch(() => null);
  const members = await sandboxMembers(deps, sandboxId).catch(() => []);
  const statuses = await Promise.all(
    members.map((m) =>
      (deps.state ? deps.state.get(m.Id) : deps.docker.getContainer(m.Id).inspect())
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
  // what the last list showed, kept current by live events; diffed after a reconnect
  let snapshot: Snapshot | undefined;
  // engine times around that list: events up to `listedFrom` are in it, those up to `listedTo` may be
  let listedFrom = 0;
  let listedTo = 0;

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

  const enqueue = (ev: DockerEvent, type: EventType): void => {
    if (subscribers.size === 0) return;
    // conversions inspect Docker; chaining keeps the delivery order Docker gave us
    chain = chain.then(async () => {
      try {
        publish(await toCriEvent(deps, ev, type));
      } catch (err) {
        deps.logger.warn('cannot convert docker event', { containerId: shortId(ev.Actor.ID), error: (err as Error).message });
      }
    });
  };

  /** False for a replayed event whose effect the last list already showed (it was synthesized then). */
  const isNew = (ev: DockerEvent): boolean => {
    if (!snapshot) return true;
    if (ev.timeNano && ev.timeNano <= listedFrom) return false;
    const changed = applyAction(snapshot, ev.Actor.ID, ev.Action, ev.Actor.Attributes ?? {});
    return changed || !ev.timeNano || ev.timeNano > listedTo;
  };

  const onDockerEvent = (ev: DockerEvent): void => {
    const type = EVENT_TYPES[ev.Action];
    if (!type || !isNew(ev)) return;
    enqueue(ev, type);
  };

  /** Lists our containers before each subscription; after a reconnect, emits what changed unseen. */
  const resync = async (reconnect: boolean): Promise<number> => {
    const from = await engineNowNano(deps.docker);
    const listed = await deps.docker.listContainers({ all: true, filters: { label: [TYPE_LABEL] } });
    const to = await engineNowNano(deps.docker);
    const next = snapshotOf(listed);
    const missed = reconnect && snapshot ? diffSnapshots(snapshot, next) : [];
    snapshot = next;
    listedFrom = from;
    listedTo = to;
    if (missed.length > 0) deps.logger.info('emitting container events missed while docker was unreachable', { count: missed.length });
    for (const m of missed) {
      deps.logger.debug('synthesized container event', { containerId: shortId(m.id), action: m.action });
      const ev: DockerEvent = { Type: 'container', Action: m.action, Actor: { ID: m.id, Attributes: m.labels }, time: Math.floor(from / 1e9), timeNano: from };
      enqueue(ev, EVENT_TYPES[m.action]);
    }
    return from;
  };

  return {
    subscribe() {
      source ??= followDockerEvents(deps.docker, { type: ['container'], label: [TYPE_LABEL] }, onDockerEvent, deps.logger, { beforeSubscribe: resync });
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
        s.failed = new DomainError('unavailable', 'crishim is shutting down');
        s.wake?.();
      }
    },
  };
}

