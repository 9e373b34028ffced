import type { CallContext, RuntimeReq } from '../server/rpc';
import type { StatsViews } from '../container/stats-views';
import { toContainerStats } from '../cri/stats-convert';

export function listContainerStats(source: StatsViews) {
  return async (req: RuntimeReq<'ListContainerStats'>, ctx: CallContext) => {
    const views = await source.containerViews(req.filter, ctx.signal);
    ctx.log.debug('container stats', { count: views.length });
    return { stats: views.map((v) => toContainerStats(v, source.mountpoint())) };
  };
}
