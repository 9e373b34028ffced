import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { StatsViews } from '../container/stats-views';
import { toContainerStats } from '../cri/stats-convert';
import { sendChunks } from '../server/stream-chunks';

export function streamContainerStats(source: StatsViews) {
  return async (
    req: RuntimeReq<'StreamContainerStats'>,
    ctx: CallContext,
    send: (m: RuntimeRes<'StreamContainerStats'>) => Promise<void>,
  ) => {
    const stats = (await source.containerViews(req.filter, ctx.signal)).map((v) =>
      toContainerStats(v, source.mountpoint()),
    );
    await sendChunks(stats, (container_stats) => ({ container_stats }), send);
  };
}
