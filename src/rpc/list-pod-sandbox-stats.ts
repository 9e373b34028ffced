import type { CallContext, RuntimeReq } from '../server/rpc';
import type { StatsViews } from '../container/stats-views';
import { toPodStats } from '../cri/stats-convert';

export function listPodSandboxStats(source: StatsViews) {
  return async (req: RuntimeReq<'ListPodSandboxStats'>, ctx: CallContext) => {
    const views = await source.podViews(req.filter, ctx.signal);
    ctx.log.debug('pod sandbox stats', { count: views.length });
    return { stats: views.map((v) => toPodStats(v, source.mountpoint())) };
  };
}
