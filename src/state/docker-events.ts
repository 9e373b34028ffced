/** Which of Docker's container events change what the view holds, and which it has already seen. */

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
