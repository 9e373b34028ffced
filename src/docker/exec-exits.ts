import type { DockerEvent } from './events';

/** The action that ends an exec, with its id and exit code. */
export const EXEC_DIE = 'exec_die';

/**
 * Exit codes of execs as Docker's `exec_die` events carry them (attributes `execID`, `exitCode`),
 * so learning how an exec probe ended costs no `GET /exec/{id}/json`. The hijacked connection
 * ends a moment before dockerd records the exit, so the inspect-only way needed one to two
 * inspects per exec, close to half the Docker requests of every exec probe on the node.
 *
 * Fed by the state view's event stream (docker-events.ts), which says when that stream is live.
 * Where no event can be relied on (the stream is down, or has brought no exec_die since it
 * connected: an engine may send none), `wait` answers at once and the caller inspects as before.
 */
export class ExecExits {
  /** Exits heard before anyone waited for them (an event can beat the stream's end); oldest dropped first. */
  private readonly heardCodes = new Map<string, number | undefined>();
  private readonly waiters = new Map<string, (code: number | undefined) => void>();
  private live = false;
  private heardAny = false;

  constructor(private readonly kept = 1024) {}

  /** Whether the stream that feeds this is subscribed: while it is not, exits go unheard. */
  setLive(live: boolean): void {
    this.live = live;
    if (live) return;
    // the engine may come back another version, one that sends no exec_die: learn it again
    this.heardAny = false;
    // whatever they wait for may have been lost with the stream: let them inspect now
    for (const resolve of this.waiters.values()) resolve(undefined);
    this.waiters.clear();
  }

  /** One `exec_die` event. */
  heard(ev: DockerEvent): void {
    const execId = ev.Actor?.Attributes?.execID;
    const raw = ev.Actor?.Attributes?.exitCode;
    if (!execId || raw === undefined || !/^-?\d+$/.test(raw)) return;
    this.heardAny = true;
    const code = Number(raw);
    // a failed start (command not found, not executable) gets 126 from inspect but sometimes 127
    // in the event, as dockerd races itself (moby#45795): for those, inspect decides, as before
    const answer = code === 126 || code === 127 ? undefined : code;
    const waiter = this.waiters.get(execId);
    if (waiter) {
      this.waiters.delete(execId);
      waiter(answer);
      return;
    }
    this.heardCodes.set(execId, answer);
    if (this.heardCodes.size > this.kept) this.heardCodes.delete(this.heardCodes.keys().next().value as string);
  }

  /**
   * The exec's exit code once its event comes, within `ms`; undefined when it does not come in
   * time, when inspect must decide (see `heard`), or when no event can be expected.
   */
  wait(execId: string, ms: number): Promise<number | undefined> {
    if (this.heardCodes.has(execId)) {
      const code = this.heardCodes.get(execId);
      this.heardCodes.delete(execId);
      return Promise.resolve(code);
    }
    if (!this.live || !this.heardAny || ms <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(execId);
        resolve(undefined);
      }, ms);
      this.waiters.set(execId, (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
  }
}
