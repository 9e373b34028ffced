import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { listContainers } from '../container/list';
import { listSandboxes } from '../sandbox/list';

/** Items per message of the Stream* RPCs: far below the 16 MiB message limit even with many labels. */
export const STREAM_CHUNK = 100;

/** Sends `items` in chunks; an empty result still sends nothing but ends the stream cleanly. */
export async function sendChunks<T, M>(items: T[], wrap: (chunk: T[]) => M, send: (m: M) => Promise<void>, size = STREAM_CHUNK): Promise<void> {
  for (let i = 0; i < items.length; i += size) await send(wrap(items.slice(i, i + size)));
}

export function streamPodSandboxes(deps: ServiceDeps) {
  return async (
    req: RuntimeReq<'StreamPodSandboxes'>,
    _ctx: CallContext,
    send: (m: RuntimeRes<'StreamPodSandboxes'>) => Promise<void>,
  ): Promise<void> => sendChunks(await listSandboxes(deps, req.filter), (pod_sandboxes) => ({ pod_sandboxes }), send);
}

export function streamContainers(deps: ServiceDeps) {
  return async (
    req: RuntimeReq<'StreamContainers'>,
    _ctx: CallContext,
    send: (m: RuntimeRes<'StreamContainers'>) => Promise<void>,
  ): Promise<void> => sendChunks(await listContainers(deps, req.filter), (containers) => ({ containers }), send);
}
