import { invalidArgument } from '../errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { mustFindContainer } from '../container/lookup';
import { checkId } from '../cri/validation';
import type { HugetlbCgroup } from '../cgroups/hugetlb';
import { applyResources } from '../container/resources';

export function updateContainerResources(deps: ServiceDeps, hugetlb: HugetlbCgroup) {
  return async (
    req: RuntimeReq<'UpdateContainerResources'>,
    ctx: CallContext,
  ): Promise<RuntimeRes<'UpdateContainerResources'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.linux) throw invalidArgument('linux resources must be set');
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id });
    await applyResources(deps, info, req.linux, 'UpdateContainerResources', ctx, hugetlb);
    return {};
  };
}
