import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { listContainers } from '../container/list';

export function listContainersRpc(deps: ServiceDeps) {
  return async (req: RuntimeReq<'ListContainers'>, _ctx: CallContext): Promise<RuntimeRes<'ListContainers'>> => ({
    containers: await listContainers(deps, req.filter),
  });
}
