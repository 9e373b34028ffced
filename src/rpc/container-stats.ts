import type { CallContext, RuntimeImpl, RuntimeReq, RuntimeRes } from '../server/rpc';
import { notFound } from '../errors';
import { createStatsCollector, type StatsCollector } from '../stats/collector';
import { mapLimit } from '../stats/pool';
import type { ServiceDeps } from './deps';
import { listContainers } from '../container/list';
import { metricDescriptors, podMetrics } from '../cri/metrics-cadvisor';
import { listSandboxes } from '../sandbox/list';
import { toContainerStats, toPodStats, type ContainerView, type PodView } from '../cri/stats-convert';
import { sendChunks } from './stream-containers';
import { checkId } from '../cri/validation';

type ContainerFilter = RuntimeReq<'ListContainerStats'>['filter'];
type PodFilter = RuntimeReq<'ListPodSandboxStats'>['filter'];

export type StatsHandlers = Required<
  Pick<
    RuntimeImpl,
    | 'ContainerStats'
    | 'ListContainerStats'
    | 'StreamContainerStats'
    | 'PodSandboxStats'
    | 'ListPodSandboxStats'
    | 'StreamPodSandboxStats'
    | 'ListMetricDescriptors'
    | 'ListPodSandboxMetrics'
    | 'StreamPodSandboxMetrics'
  >
>;

/**
 * Stats and metrics RPCs. The containers and their facts (pid, cgroup parent,
 * upper dir) come from the state view, so no RPC calls Docker in the steady
 * state; the rest is cgroup and /proc files (cgroup paths read once per process
 * start, see stats/facts.ts), so dockerd does no work per container, unlike
 * `docker stats` (cri-dockerd issue 135).
 */
export function statsHandlers(
  deps: ServiceDeps,
  collector: StatsCollector = createStatsCollector(deps.docker, deps.logger, { view: deps.state, reuseMs: 500 }),
): StatsHandlers {
  /** fs_id of writable layers: Docker's data root, from the cached `docker info`. */
  const mountpoint = (): string => deps.engine.current().dockerRootDir ?? '/var/lib/docker';

  const containerViews = async (filter: ContainerFilter, signal: AbortSignal): Promise<ContainerView[]> => {
    const containers = await listContainers(deps, {
      id: filter?.id ?? '',
      pod_sandbox_id: filter?.pod_sandbox_id ?? '',
      label_selector: filter?.label_selector ?? {},
      state: null,
    });
    const unfiltered = !filter?.id && !filter?.pod_sandbox_id && Object.keys(filter?.label_selector ?? {}).length === 0;
    if (unfiltered) collector.retain(new Set(containers.map((c) => c.id ?? '')), 'container');
    const samples = await collector.containers(
      containers.map((c) => ({ id: c.id ?? '', running: c.state === 'CONTAINER_RUNNING' })),
      signal,
    );
    return containers.map((c, i) => ({ c, s: samples[i] }));
  };

  const podViews = async (filter: PodFilter, signal: AbortSignal): Promise<PodView[]> => {
    // a full sandbox id lets Docker filter the containers too
    const onePod = filter?.id?.length === 64 ? filter.id : '';
    const [sandboxes, containers] = await Promise.all([
      listSandboxes(deps, { id: filter?.id ?? '', label_selector: filter?.label_selector ?? {}, state: null }),
      listContainers(deps, { id: '', pod_sandbox_id: onePod, label_selector: {}, state: null }),
    ]);
    const unfiltered = !filter?.id && Object.keys(filter?.label_selector ?? {}).length === 0;
    if (unfiltered) {
      collector.retain(new Set(sandboxes.map((s) => s.id ?? '')), 'sandbox');
      collector.retain(new Set(containers.map((c) => c.id ?? '')), 'container');
    }
    const wanted = new Set(sandboxes.map((s) => s.id));
    const mine = containers.filter((c) => wanted.has(c.pod_sandbox_id));
    const samples = await collector.containers(
      mine.map((c) => ({ id: c.id ?? '', running: c.state === 'CONTAINER_RUNNING' })),
      signal,
    );
    const views = mine.map((c, i): ContainerView => ({ c, s: samples[i] }));
    return mapLimit(sandboxes, 8, async (sb) => {
      const members = views.filter((v) => v.c.pod_sandbox_id === sb.id);
      const pod = await collector.pod(
        { id: sb.id ?? '', running: sb.state === 'SANDBOX_READY' },
        members.map((m) => m.s),
        signal,
      );
      return { sb, pod, members };
    });
  };

  return {
    async ContainerStats(req: RuntimeReq<'ContainerStats'>, ctx: CallContext) {
      const id = checkId('container_id', req.container_id);
      const views = await containerViews({ id, pod_sandbox_id: '', label_selector: {} }, ctx.signal);
      const found = views.find((v) => v.c.id === id) ?? views[0];
      if (!found) throw notFound(`container ${id}`);
      ctx.annotate({ containerId: found.c.id ?? '' });
      return { stats: toContainerStats(found, mountpoint()) };
    },
    async ListContainerStats(req: RuntimeReq<'ListContainerStats'>, ctx: CallContext) {
      const views = await containerViews(req.filter, ctx.signal);
      ctx.log.debug('container stats', { count: views.length });
      return { stats: views.map((v) => toContainerStats(v, mountpoint())) };
    },
    async StreamContainerStats(req: RuntimeReq<'StreamContainerStats'>, ctx: CallContext, send: (m: RuntimeRes<'StreamContainerStats'>) => Promise<void>) {
      const stats = (await containerViews(req.filter, ctx.signal)).map((v) => toContainerStats(v, mountpoint()));
      await sendChunks(stats, (container_stats) => ({ container_stats }), send);
    },
    async PodSandboxStats(req: RuntimeReq<'PodSandboxStats'>, ctx: CallContext) {
      const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
      const views = await podViews({ id, label_selector: {} }, ctx.signal);
      const found = views.find((v) => v.sb.id === id) ?? views[0];
      if (!found) throw notFound(`pod sandbox ${id}`);
      ctx.annotate({ podSandboxId: found.sb.id ?? '' });
      return { stats: toPodStats(found, mountpoint()) };
    },
    async ListPodSandboxStats(req: RuntimeReq<'ListPodSandboxStats'>, ctx: CallContext) {
      const views = await podViews(req.filter, ctx.signal);
      ctx.log.debug('pod sandbox stats', { count: views.length });
      return { stats: views.map((v) => toPodStats(v, mountpoint())) };
    },
    async StreamPodSandboxStats(req: RuntimeReq<'StreamPodSandboxStats'>, ctx: CallContext, send: (m: RuntimeRes<'StreamPodSandboxStats'>) => Promise<void>) {
      const stats = (await podViews(req.filter, ctx.signal)).map((v) => toPodStats(v, mountpoint()));
      await sendChunks(stats, (pod_sandbox_stats) => ({ pod_sandbox_stats }), send);
    },
    async ListMetricDescriptors() {
      return { descriptors: metricDescriptors() };
    },
    async ListPodSandboxMetrics(_req: RuntimeReq<'ListPodSandboxMetrics'>, ctx: CallContext) {
      return { pod_metrics: (await podViews(null, ctx.signal)).map((v) => podMetrics(v, mountpoint())) };
    },
    async StreamPodSandboxMetrics(_req: RuntimeReq<'StreamPodSandboxMetrics'>, ctx: CallContext, send: (m: RuntimeRes<'StreamPodSandboxMetrics'>) => Promise<void>) {
      const metrics = (await podViews(null, ctx.signal)).map((v) => podMetrics(v, mountpoint()));
      await sendChunks(metrics, (pod_sandbox_metrics) => ({ pod_sandbox_metrics }), send);
    },
  };
}
