import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { listSandboxes } from '../sandbox/list';

export function listPodSandbox(deps: ServiceDeps) {
  return async (req: RuntimeReq<'ListPodSandbox'>, _ctx: CallContext): Promise<RuntimeRes<'ListPodSandbox'>> => ({
    items: await listSandboxes(deps, req.filter),
  });
}
