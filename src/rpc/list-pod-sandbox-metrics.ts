import type { CallContext, RuntimeReq } from '../server/rpc';
import type { StatsViews } from '../container/stats-views';
import { podMetrics } from '../cri/metrics-cadvisor';

export function listPodSandboxMetrics(source: StatsViews) {
  return async (_req: RuntimeReq<'ListPodSandboxMetrics'>, ctx: CallContext) => {
    return { pod_metrics: (await source.podViews(null, ctx.signal)).map((v) => podMetrics(v, source.mountpoint())) };
  };
}
