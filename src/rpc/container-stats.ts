import type { CallContext, RuntimeReq } from '../server/rpc';
import { notFound } from '../errors';
import type { StatsViews } from '../container/stats-views';
import { toContainerStats } from '../cri/stats-convert';
import { checkId } from '../cri/validation';

export function containerStats(source: StatsViews) {
  return async (req: RuntimeReq<'ContainerStats'>, ctx: CallContext) => {
    const id = checkId('container_id', req.container_id);
    const views = await source.containerViews({ id, pod_sandbox_id: '', label_selector: {} }, ctx.signal);
    const found = views.find((v) => v.c.id === id) ?? views[0];
    if (!found) throw notFound(`container ${id}`);
    ctx.annotate({ containerId: found.c.id ?? '' });
    return { stats: toContainerStats(found, source.mountpoint()) };
  };
}
