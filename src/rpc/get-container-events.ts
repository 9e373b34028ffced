import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { EventHub } from '../events/hub';

type CriEvent = RuntimeRes<'GetContainerEvents'>;

/** Streams the hub's CRI events to one caller until it goes away (or falls too far behind). */
export function getContainerEvents(hub: EventHub) {
  return async (
    _req: RuntimeReq<'GetContainerEvents'>,
    ctx: CallContext,
    send: (ev: CriEvent) => Promise<void>,
  ): Promise<void> => {
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
