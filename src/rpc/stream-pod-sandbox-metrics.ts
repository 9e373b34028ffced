import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { StatsViews } from '../container/stats-views';
import { podMetrics } from '../cri/metrics-cadvisor';
import { sendChunks } from '../server/stream-chunks';

export function streamPodSandboxMetrics(source: StatsViews) {
  return async (
    _req: RuntimeReq<'StreamPodSandboxMetrics'>,
    ctx: CallContext,
    send: (m: RuntimeRes<'StreamPodSandboxMetrics'>) => Promise<void>,
  ) => {
    const metrics = (await source.podViews(null, ctx.signal)).map((v) => podMetrics(v, source.mountpoint()));
    await sendChunks(metrics, (pod_sandbox_metrics) => ({ pod_sandbox_metrics }), send);
  };
}
