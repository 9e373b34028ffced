import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { failedPrecondition, notFound } from '../errors';
import type { HugetlbCgroup } from '../cgroups/hugetlb';
import type { ServiceDeps } from '../service-deps';
import { applyResources } from '../container/resources';
import { findSandbox } from '../sandbox/lookup';
import { checkId } from '../cri/validation';

/** Pod-level resources: applied to the pause container, whose cgroup Docker manages. */
export function updatePodSandboxResources(deps: ServiceDeps, hugetlb: HugetlbCgroup) {
  return async (
    req: RuntimeReq<'UpdatePodSandboxResources'>,
    ctx: CallContext,
  ): Promise<RuntimeRes<'UpdatePodSandboxResources'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const rec = await findSandbox(deps, id);
    if (!rec) throw notFound(`pod sandbox ${id}`);
    ctx.annotate({ podSandboxId: rec.id });
    if (!rec.container?.State.Running) throw failedPrecondition(`pod sandbox ${rec.id} is not ready`);
    await applyResources(deps, rec.container, req.resources, 'UpdatePodSandboxResources', ctx, hugetlb);
    return {};
  };
}
