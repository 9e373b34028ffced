import { SANDBOX_ID_LABEL, TYPE_LABEL, TYPE_SANDBOX } from '../labels';

/** What the hub knows of each container between events: enough to tell which transitions a reconnect missed. */
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

export function snapshotOf(
  list: Array<{ Id: string; State: string; Labels: Record<string, string> | null }>,
): Snapshot {
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
