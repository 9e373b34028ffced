import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { sendChunks } from '../server/stream-chunks';
import { listContainers } from '../container/list';

export function streamContainers(deps: ServiceDeps) {
  return async (
    req: RuntimeReq<'StreamContainers'>,
    _ctx: CallContext,
    send: (m: RuntimeRes<'StreamContainers'>) => Promise<void>,
  ): Promise<void> => sendChunks(await listContainers(deps, req.filter), (containers) => ({ containers }), send);
}
