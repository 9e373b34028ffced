import type { Logger } from '../logging/logger';

/**
 * What a Docker call still unanswered after the stall timeout says:
 * - `engine`: dockerd itself is stuck (a ping, list, inspect or create that answers in
 *   milliseconds on a working engine). Status then reports RuntimeReady=false.
 * - `object`: one container or image may be stuck (a stop or kill of a process in
 *   uninterruptible sleep, a remove of huge layers); the call is logged, the node is not
 *   condemned.
 */
export type StallScope = 'engine' | 'object';

export interface StalledCall {
  /** The DockerEngine method, e.g. `inspectContainer`. */
  call: string;
  /** The object it concerns (`containerId`, `image`, ...), as the log lines name it. */
  fields: Record<string, string>;
  waitedMs: number;
}

export interface StallWatch {
  /**
   * Starts timing one call and answers the function that ends it. `allowanceMs` is time
   * the call may take on top of the timeout (a stop's grace period).
   */
  begin(call: string, scope: StallScope, fields: Record<string, string>, allowanceMs?: number): () => void;
  /** The longest-waiting engine-scoped call past the timeout, if any: costs a scan of the calls in flight. */
  stalled(): StalledCall | undefined;
  /** How long the oldest engine-scoped call in flight has waited, past the timeout or not (0: none). */
  oldestWaitMs(): number;
  /** Logs each call when it passes the timeout; a timer does this on its own. */
  check(): void;
  close(): void;
}

export interface StallWatchOptions {
  /** A call unanswered this long counts as stalled; 0 turns the watch off. */
  timeoutMs: number;
  logger: Logger;
  now?: () => number;
}

interface InFlight {
  call: string;
  scope: StallScope;
  fields: Record<string, string>;
  startedAt: number;
  deadline: number;
  reported: boolean;
}

const OFF: StallWatch = {
  begin: () => () => undefined,
  stalled: () => undefined,
  oldestWaitMs: () => 0,
  check: () => undefined,
  close: () => undefined,
};

/**
 * Watches Docker calls in flight. The state view answers List and Status without Docker,
 * so a hung dockerd no longer stalls the kubelet's relist (the PLEG health check that made
 * the node NotReady under dockershim): without this watch crishim would report a working
 * runtime while every create, inspect and remove hangs.
 */
export function createStallWatch(opts: StallWatchOptions): StallWatch {
  if (opts.timeoutMs <= 0) return OFF;
  // monotonic: a wall-clock step must neither fake nor hide a stall
  const now = opts.now ?? ((): number => performance.now());
  const inFlight = new Set<InFlight>();

  // a Set iterates in insertion order, which is the order the calls started
  const oldestEngineCall = (): InFlight | undefined => {
    for (const c of inFlight) if (c.scope === 'engine') return c;
    return undefined;
  };
  const waited = (c: InFlight, at: number): StalledCall => ({
    call: c.call,
    fields: c.fields,
    waitedMs: at - c.startedAt,
  });

  const check = (): void => {
    const at = now();
    for (const c of inFlight) {
      if (c.reported || at < c.deadline) continue;
      c.reported = true;
      const seconds = Math.round((at - c.startedAt) / 1000);
      const consequence =
        c.scope === 'engine' ? 'Status reports RuntimeReady=false until it answers' : 'that object may be stuck';
      opts.logger.warn(`docker ${c.call} has not answered for ${seconds} s; ${consequence}`, {
        ...c.fields,
        inFlight: inFlight.size,
      });
    }
  };
  const timer = setInterval(check, Math.min(5000, Math.max(250, opts.timeoutMs / 4)));
  timer.unref();

  return {
    begin(call, scope, fields, allowanceMs = 0) {
      const startedAt = now();
      const c: InFlight = {
        call,
        scope,
        fields,
        startedAt,
        deadline: startedAt + opts.timeoutMs + allowanceMs,
        reported: false,
      };
      inFlight.add(c);
      return () => {
        inFlight.delete(c);
        if (!c.reported) return;
        const seconds = Math.round((now() - c.startedAt) / 1000);
        opts.logger.info(`docker ${c.call} answered after ${seconds} s`, c.fields);
      };
    },
    stalled() {
      const at = now();
      for (const c of inFlight) if (c.scope === 'engine' && at >= c.deadline) return waited(c, at);
      return undefined;
    },
    oldestWaitMs() {
      const oldest = oldestEngineCall();
      return oldest ? now() - oldest.startedAt : 0;
    },
    check,
    close: () => clearInterval(timer),
  };
}

/** The sentence Status and the systemd STATUS= line carry for a stalled call. */
export function describeStall(s: StalledCall): string {
  const subject = Object.values(s.fields);
  const about = subject.length ? ` (${subject.join(', ')})` : '';
  return `docker ${s.call}${about} has not answered for ${Math.round(s.waitedMs / 1000)} s: dockerd may be hung`;
}
