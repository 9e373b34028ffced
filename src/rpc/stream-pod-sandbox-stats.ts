import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { StatsViews } from '../container/stats-views';
import { toPodStats } from '../cri/stats-convert';
import { sendChunks } from '../server/stream-chunks';

export function streamPodSandboxStats(source: StatsViews) {
  return async (
    req: RuntimeReq<'StreamPodSandboxStats'>,
    ctx: CallContext,
    send: (m: RuntimeRes<'StreamPodSandboxStats'>) => Promise<void>,
  ) => {
    const stats = (await source.podViews(req.filter, ctx.signal)).map((v) => toPodStats(v, source.mountpoint()));
    await sendChunks(stats, (pod_sandbox_stats) => ({ pod_sandbox_stats }), send);
  };
}
