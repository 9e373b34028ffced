import type { DockerEngine } from '../docker/engine';
import {
  followDockerEvents,
  type DockerEvent,
  type EventFilters,
  type EventSource,
  type FollowOptions,
} from '../docker/events';
import type { Logger } from '../logging/logger';
import { TYPE_LABEL } from '../labels';
import { BoundedSet } from './bounded-set';
import { EXEC_DIE, type ExecExits } from '../docker/exec-exits';

/** Which of Docker's events the view follows, which change what it holds, and which it has already seen. */

/**
 * Event actions after which inspect may answer differently (exec_*, attach, top, ... do not; nor
 * does kill, a signal sent: the die that may follow is what changes the state).
 */
export const CHANGING_EVENTS = new Set([
  'create',
  'start',
  'restart',
  'die',
  'destroy',
  'pause',
  'unpause',
  'update',
  'rename',
  'oom',
  'stop',
]);

/**
 * What the view subscribes to: only the actions it acts on. Every ExecSync makes Docker send
 * exec_create, exec_start and exec_die for the container; Docker matches `event` exactly (exec_*
 * with a command suffix included), so the first two never leave dockerd. exec_die (no suffix) is
 * asked for when someone waits for exec exits (`viewEventFilters`): it saves an inspect per exec.
 */
export const VIEW_EVENT_FILTERS: EventFilters = {
  type: ['container'],
  label: [TYPE_LABEL],
  event: [...CHANGING_EVENTS],
};

/** The view's filters, with exec_die when someone hears exec exits from its stream. */
export const viewEventFilters = (execExits: boolean): EventFilters =>
  execExits ? { ...VIEW_EVENT_FILTERS, event: [...(VIEW_EVENT_FILTERS.event ?? []), EXEC_DIE] } : VIEW_EVENT_FILTERS;

/**
 * The view's subscription. With `execExits`, it also carries every exec's exec_die, which goes
 * there and not to `onEvent` (an exec changes nothing the view holds), and `execExits` is told
 * while the stream is live: only then can an exit be heard at all.
 */
export function followViewEvents(
  docker: DockerEngine,
  logger: Logger,
  execExits: ExecExits | undefined,
  onEvent: (ev: DockerEvent) => void,
  opts: FollowOptions,
): EventSource {
  const route = (ev: DockerEvent): void => (ev.Action === EXEC_DIE ? execExits?.heard(ev) : onEvent(ev));
  const source = followDockerEvents(docker, viewEventFilters(!!execExits), route, logger, {
    ...opts,
    onSubscribed: (reconnect) => {
      execExits?.setLive(true);
      opts.onSubscribed?.(reconnect);
    },
    onDisconnect: (why) => {
      execExits?.setLive(false);
      opts.onDisconnect?.(why);
    },
  });
  return {
    close() {
      source.close();
      execExits?.setLive(false);
    },
  };
}

/** How long after crishim's own call (monotonic ms) its events are taken as seen: they come within milliseconds. */
const BRINGS_MS = 2000;

/**
 * The events crishim's last call on a container made Docker send, and until when. Docker sends
 * them before it answers the call, and the view re-inspects the container after the answer: that
 * inspect shows their change whenever they arrive, so they need no inspect of their own (one a
 * container start used to cost, and each of its create and stop). Any other event ends this: a
 * second event of the same kind needs a change in between (a die comes after a start), and that
 * change is such an other event.
 */
export interface Brought {
  actions: readonly string[];
  until: number;
}

export const brought = (actions: readonly string[] | undefined, now = performance.now()): Brought | undefined =>
  actions?.length ? { actions, until: now + BRINGS_MS } : undefined;

/** Whether `action` is one of those crishim's last call brought, still in its time. */
export const wasBrought = (b: Brought, action: string, now = performance.now()): boolean =>
  b.actions.includes(action) && now <= b.until;

/** How many events heard on one stream wait for the other's copy before the oldest is forgotten. */
const HEARD_KEPT = 2048;

/**
 * Two subscriptions deliver the same Docker events: the view's own and the events hub's
 * (src/events/hub.ts), which must read what an event changed before it converts it. Each event is
 * acted on at its first hearing, whichever stream that is: the hub used to make the view re-inspect
 * at every event it converted, one more inspect for each one the view had already taken in.
 * Bounded: a key whose copy never comes (the hub has no subscriber) goes after HEARD_KEPT newer.
 */
export class HeardOnce {
  private readonly waiting: BoundedSet;

  constructor(kept = HEARD_KEPT) {
    this.waiting = new BoundedSet(kept);
  }

  /** Whether this is the event's first hearing (an event with no engine time always is). */
  first(ev: DockerEvent): boolean {
    if (!ev.timeNano) return true;
    const key = `${ev.Actor.ID} ${ev.Action} ${ev.timeNano}`;
    if (this.waiting.delete(key)) return false;
    this.waiting.add(key);
    return true;
  }
}
