import type { CallContext, RuntimeReq } from '../server/rpc';
import { notFound } from '../errors';
import type { StatsViews } from '../container/stats-views';
import { toPodStats } from '../cri/stats-convert';
import { checkId } from '../cri/validation';

export function podSandboxStats(source: StatsViews) {
  return async (req: RuntimeReq<'PodSandboxStats'>, ctx: CallContext) => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const views = await source.podViews({ id, label_selector: {} }, ctx.signal);
    const found = views.find((v) => v.sb.id === id) ?? views[0];
    if (!found) throw notFound(`pod sandbox ${id}`);
    ctx.annotate({ podSandboxId: found.sb.id ?? '' });
    return { stats: toPodStats(found, source.mountpoint()) };
  };
}
