import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { sendChunks } from '../server/stream-chunks';
import { listSandboxes } from '../sandbox/list';

export function streamPodSandboxes(deps: ServiceDeps) {
  return async (
    req: RuntimeReq<'StreamPodSandboxes'>,
    _ctx: CallContext,
    send: (m: RuntimeRes<'StreamPodSandboxes'>) => Promise<void>,
  ): Promise<void> => sendChunks(await listSandboxes(deps, req.filter), (pod_sandboxes) => ({ pod_sandboxes }), send);
}
