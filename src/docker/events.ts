import type { DockerApi } from './client';
import type { Logger } from '../logging/logger';

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

/**
 * Follows Docker's event stream for containers carrying `label`, and resubscribes
 * (from the last event seen, so nothing is missed) whenever the stream breaks,
 * e.g. across a dockerd restart.
 */
export function followDockerEvents(
  docker: DockerApi,
  label: string,
  onEvent: (ev: DockerEvent) => void,
  logger: Logger,
  opts: { retryMs?: number } = {},
): EventSource {
  let closed = false;
  let lastNano = 0;
  let current: { destroy(): void } | undefined;
  let retry: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    if (closed) return;
    try {
      const since = lastNano ? String(Math.floor(lastNano / 1e9)) : undefined;
      const stream = (await docker.getEvents({
        since: since as unknown as number,
        filters: { type: ['container'], label: [label] },
      })) as NodeJS.ReadableStream & { destroy(): void };
      current = stream;
      if (closed) return stream.destroy();
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
          // `since` has one-second resolution: skip what we already delivered
          if (ev.timeNano && ev.timeNano <= lastNano) continue;
          lastNano = ev.timeNano || lastNano;
          onEvent(ev);
        }
      });
      const again = (why: string): void => {
        if (closed || current !== stream) return;
        current = undefined;
        logger.warn('docker event stream ended; resubscribing', { reason: why });
        schedule();
      };
      stream.on('end', () => again('end'));
      stream.on('close', () => again('close'));
      stream.on('error', (err: Error) => again(err.message));
    } catch (err) {
      logger.debug('cannot subscribe to docker events yet', { error: (err as Error).message });
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
