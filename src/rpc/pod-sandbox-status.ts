import { notFound } from '../errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { findSandbox } from '../sandbox/lookup';
import { STATUS_READ } from '../state/store';
import { checkId } from '../cri/validation';
import { sandboxStatusOf } from '../sandbox/status';

export function podSandboxStatus(deps: ServiceDeps) {
  return async (req: RuntimeReq<'PodSandboxStatus'>, ctx: CallContext): Promise<RuntimeRes<'PodSandboxStatus'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const rec = await findSandbox(deps, id, STATUS_READ);
    if (!rec) throw notFound(`pod sandbox ${id}`);
    ctx.annotate({ podSandboxId: rec.id });
    const status = await sandboxStatusOf(deps, rec);
    const info: Record<string, string> = {};
    if (req.verbose) {
      info.info = JSON.stringify({
        pid: rec.container?.State.Pid ?? 0,
        image: rec.container?.Config.Image,
        dockerState: rec.container?.State.Status ?? 'missing',
        checkpoint: rec.checkpoint ?? null,
      });
    }
    return { status, info, containers_statuses: [], timestamp: '0' };
  };
}
