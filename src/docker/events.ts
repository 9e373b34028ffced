import type { DockerApi } from './client';
import type { Logger } from '../logging/logger';
import { rfc3339ToNanos } from '../time';

/** The fields of a Docker event crishim uses. */
export interface DockerEvent {
  Type: string;
  Action: string;
  Actor: { ID: string; Attributes: Record<string, string> };
  time: number;
  timeNano: number;
}

export interface EventSource {
  close(): void;
}

/** Docker's `filters` for /events, e.g. `{ type: ['container'], label: ['io.kubernetes.docker.type'] }`. */
export type EventFilters = Record<string, string[]>;

export interface FollowOptions {
  retryMs?: number;
  /**
   * Runs before each subscription (`reconnect` is false the first time); a rejection
   * counts as a failed connection and is retried. Lets a caller resynchronise state
   * that the stream cannot replay (dockerd's event buffer does not survive its restart).
   * It may answer the engine time (ns) its state was read at: the first subscription then
   * starts there, so nothing that happens between that read and the subscription is lost.
   */
  beforeSubscribe?: (reconnect: boolean) => Promise<number | void>;
  /** Runs once Docker accepted a subscription: events from here on will arrive. */
  onSubscribed?: (reconnect: boolean) => void;
  /** Runs when a subscription broke: events may be lost until the next onSubscribed. */
  onDisconnect?: (reason: string) => void;
}

/**
 * Follows Docker's event stream for the given filters, and resubscribes (from
 * the last event seen, so nothing the engine still holds is missed) whenever the
 * stream breaks, e.g. across a dockerd restart.
 */
export function followDockerEvents(
  docker: DockerApi,
  filters: EventFilters,
  onEvent: (ev: DockerEvent) => void,
  logger: Logger,
  opts: FollowOptions = {},
): EventSource {
  let closed = false;
  // the newest event time seen: the next subscription's `since` (whole seconds) is taken from it
  let lastNano = 0;
  // events before this were already reflected by the caller's list (first subscription only)
  let floorNano = 0;
  const replays = createReplayFilter();
  let subscribedOnce = false;
  let current: { destroy(): void } | undefined;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    if (closed) return;
    try {
      const readAt = await opts.beforeSubscribe?.(subscribedOnce);
      if (closed) return;
      if (!lastNano && typeof readAt === 'number') lastNano = floorNano = readAt;
      const since = lastNano ? String(Math.floor(lastNano / 1e9)) : undefined;
      const stream = (await docker.getEvents({
        since: since as unknown as number,
        filters,
      })) as NodeJS.ReadableStream & { destroy(): void };
      const reconnect = subscribedOnce;
      subscribedOnce = true;
      current = stream;
      if (closed) return stream.destroy();
      opts.onSubscribed?.(reconnect);
      let pending = '';
      stream.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, nl).trim();
          pending = pending.slice(nl + 1);
          if (!line) continue;
          let ev: DockerEvent;
          try {
            ev = JSON.parse(line) as DockerEvent;
          } catch {
            continue;
          }
          if (ev.timeNano && ev.timeNano <= floorNano) continue;
          // `since` has one-second resolution: a resubscription replays part of what was
          // delivered. Events can also arrive slightly out of time order (dockerd stamps
          // before it publishes), so only an exact replay is skipped, never an older event.
          if (!replays.fresh(ev)) continue;
          lastNano = Math.max(lastNano, ev.timeNano || 0);
          onEvent(ev);
        }
      });
      const again = (why: string): void => {
        if (closed || current !== stream) return;
        current = undefined;
        logger.warn('docker event stream ended; resubscribing', { reason: why, filters });
        opts.onDisconnect?.(why);
        schedule();
      };
      stream.on('end', () => again('end'));
      stream.on('close', () => again('close'));
      stream.on('error', (err: Error) => again(err.message));
    } catch (err) {
      logger.debug('cannot subscribe to docker events yet', { error: (err as Error).message, filters });
      schedule();
    }
  };
  const schedule = (): void => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, opts.retryMs ?? 1000);
    retry.unref();
  };
  void connect();
  return {
    close() {
      closed = true;
      if (retry) clearTimeout(retry);
      current?.destroy();
    },
  };
}

/**
 * Remembers the (id, action, timeNano) of delivered events from the newest whole
 * second on, the part a resubscription `since` that second can replay; older keys
 * are dropped, so memory stays bounded by one second of events.
 */
export function createReplayFilter(): { fresh(ev: DockerEvent): boolean } {
  const seen = new Map<string, number>();
  let windowStart = 0;
  return {
    fresh(ev) {
      if (!ev.timeNano) return true;
      const key = `${ev.Actor?.ID ?? ''}|${ev.Action}|${ev.timeNano}`;
      if (seen.has(key)) return false;
      seen.set(key, ev.timeNano);
      // a replay starts at floor(newest / 1 s): keys before that can never come back
      const start = Math.floor(ev.timeNano / 1e9) * 1e9;
      if (start > windowStart) {
        windowStart = start;
        for (const [k, t] of seen) if (t < windowStart) seen.delete(k);
      }
      return true;
    },
  };
}

/**
 * The engine's clock in nanoseconds (from `docker info`), comparable with event
 * `timeNano` even when a remote engine's clock differs from ours.
 */
export async function engineNowNano(docker: DockerApi): Promise<number> {
  const info = (await docker.info()) as { SystemTime?: string };
  return Number(rfc3339ToNanos(info.SystemTime)) || Date.now() * 1e6;
}
