import { notFound } from '../server/errors';
import type { CallContext, RuntimeImpl, RuntimeReq, RuntimeRes } from '../server/rpc';
import { createStatsCollector, type Sample } from '../stats/collector';
import type { InterfaceUsage } from '../stats/netdev';
import type { ServiceDeps } from './deps';
import { listContainers } from './container-list';
import { listSandboxes } from './sandbox-list';
import { sendChunks } from './stream-lists';
import { checkId } from './validation';

type CriContainerStats = NonNullable<RuntimeRes<'ContainerStats'>['stats']>;
type CriPodStats = NonNullable<RuntimeRes<'PodSandboxStats'>['stats']>;
type CriContainer = Awaited<ReturnType<typeof listContainers>>[number];
type CriSandbox = Awaited<ReturnType<typeof listSandboxes>>[number];
type PodMetrics = NonNullable<RuntimeRes<'ListPodSandboxMetrics'>['pod_metrics']>[number];
type Metric = NonNullable<PodMetrics['metrics']>[number];

const u64 = (v: number | bigint | undefined): { value: string } | null => (v === undefined ? null : { value: String(v) });

/** cAdvisor-named metrics crishim exposes per container (the kubelet's /metrics/cadvisor). */
export const METRIC_DESCRIPTORS = [
  { name: 'container_cpu_usage_seconds_total', help: 'Cumulative CPU time consumed, in seconds.', type: 'COUNTER' },
  { name: 'container_memory_working_set_bytes', help: 'Memory in use that cannot be reclaimed (usage minus inactive file).', type: 'GAUGE' },
  { name: 'container_memory_usage_bytes', help: 'Memory in use, including page cache.', type: 'GAUGE' },
  { name: 'container_memory_rss', help: 'Anonymous memory (RSS).', type: 'GAUGE' },
  { name: 'container_fs_usage_bytes', help: 'Bytes used by the writable layer.', type: 'GAUGE' },
  { name: 'container_processes', help: 'Processes (tasks) in the container.', type: 'GAUGE' },
  { name: 'container_network_receive_bytes_total', help: 'Bytes received by the pod, per interface.', type: 'COUNTER' },
  { name: 'container_network_transmit_bytes_total', help: 'Bytes sent by the pod, per interface.', type: 'COUNTER' },
] as const;
const LABEL_KEYS = ['container', 'pod', 'namespace', 'interface'];

export function statsHandlers(
  deps: ServiceDeps,
): Required<
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
> {
  const collector = createStatsCollector(deps.docker);
  const mountpoint = (): string => deps.engine.current().dockerRootDir ?? '/var/lib/docker';

  const toStats = (c: CriContainer, s: Sample): CriContainerStats => ({
    attributes: { id: c.id, metadata: c.metadata, labels: c.labels, annotations: c.annotations },
    cpu: { timestamp: s.timestamp, usage_core_nano_seconds: u64(s.usage.cpuUsageNanos ?? 0), usage_nano_cores: u64(s.nanoCores) },
    memory: {
      timestamp: s.timestamp,
      working_set_bytes: u64(s.usage.workingSet ?? 0),
      available_bytes: s.usage.memoryLimit !== undefined && s.usage.workingSet !== undefined ? u64(Math.max(0, s.usage.memoryLimit - s.usage.workingSet)) : null,
      usage_bytes: u64(s.usage.memoryUsage ?? 0),
      rss_bytes: u64(s.usage.rss ?? 0),
      page_faults: u64(s.usage.pageFaults ?? 0),
      major_page_faults: u64(s.usage.majorPageFaults ?? 0),
    },
    writable_layer: {
      timestamp: s.timestamp,
      fs_id: { mountpoint: mountpoint() },
      used_bytes: u64(s.writable?.bytes ?? 0),
      inodes_used: u64(s.writable?.inodes ?? 0),
    },
  });

  /** Stats of every matching container: one Docker list call, then cgroup files. */
  const containerStats = async (filter: RuntimeReq<'ListContainerStats'>['filter']): Promise<Array<{ c: CriContainer; s: Sample }>> => {
    const containers = await listContainers(deps, filter ? { id: filter.id, pod_sandbox_id: filter.pod_sandbox_id, label_selector: filter.label_selector, state: null } : null);
    if (!filter?.id && !filter?.pod_sandbox_id) collector.retain(new Set(containers.map((c) => c.id ?? '')));
    return Promise.all(containers.map(async (c) => ({ c, s: await collector.sample(c.id ?? '', c.state === 'CONTAINER_RUNNING') })));
  };

  const network = (pause: Sample['timestamp'], ifaces: InterfaceUsage[] | undefined): NonNullable<CriPodStats['linux']>['network'] => {
    if (!ifaces) return null;
    const toCri = (i: InterfaceUsage): { name: string; rx_bytes: { value: string } | null; rx_errors: { value: string } | null; tx_bytes: { value: string } | null; tx_errors: { value: string } | null } => ({
      name: i.name,
      rx_bytes: u64(i.rxBytes),
      rx_errors: u64(i.rxErrors),
      tx_bytes: u64(i.txBytes),
      tx_errors: u64(i.txErrors),
    });
    const def = ifaces.find((i) => i.name === 'eth0') ?? ifaces[0];
    return { timestamp: pause, default_interface: def ? toCri(def) : null, interfaces: ifaces.map(toCri) };
  };

  /** Pod stats: the pod's containers summed (pause included), network from the pod netns. */
  const podStats = async (filter: RuntimeReq<'ListPodSandboxStats'>['filter']): Promise<CriPodStats[]> => {
    const [sandboxes, members] = await Promise.all([
      listSandboxes(deps, filter ? { id: filter.id, label_selector: filter.label_selector, state: null } : null),
      containerStats(null),
    ]);
    return Promise.all(
      sandboxes.map(async (sb: CriSandbox) => {
        const ready = sb.state === 'SANDBOX_READY';
        const pause = await collector.sample(sb.id ?? '', ready);
        const mine = members.filter((m) => m.c.pod_sandbox_id === sb.id);
        const all = [pause, ...mine.map((m) => m.s)];
        const sum = (f: (s: Sample) => number | bigint | undefined): bigint => all.reduce((acc, s) => acc + BigInt(f(s) ?? 0), 0n);
        const nano = all.some((s) => s.nanoCores !== undefined) ? sum((s) => s.nanoCores) : undefined;
        return {
          attributes: { id: sb.id, metadata: sb.metadata, labels: sb.labels, annotations: sb.annotations },
          linux: {
            cpu: { timestamp: pause.timestamp, usage_core_nano_seconds: u64(sum((s) => s.usage.cpuUsageNanos)), usage_nano_cores: u64(nano) },
            memory: {
              timestamp: pause.timestamp,
              working_set_bytes: u64(sum((s) => s.usage.workingSet)),
              usage_bytes: u64(sum((s) => s.usage.memoryUsage)),
              rss_bytes: u64(sum((s) => s.usage.rss)),
              page_faults: u64(sum((s) => s.usage.pageFaults)),
              major_page_faults: u64(sum((s) => s.usage.majorPageFaults)),
            },
            network: ready ? network(pause.timestamp, await collector.network(sb.id ?? '')) : null,
            process: { timestamp: pause.timestamp, process_count: u64(sum((s) => s.usage.pids)) },
            containers: mine.map((m) => toStats(m.c, m.s)),
          },
        };
      }),
    );
  };

  const metricsOf = (p: CriPodStats): PodMetrics => {
    const meta = p.attributes?.metadata;
    type U64 = { value?: string | number | object } | null | undefined;
    const metric = (name: (typeof METRIC_DESCRIPTORS)[number]['name'], ts: unknown, value: U64, labels: string[]): Metric => ({
      name,
      timestamp: String(ts ?? '0'),
      metric_type: METRIC_DESCRIPTORS.find((d) => d.name === name)?.type ?? 'GAUGE',
      label_values: labels,
      value: { value: String(value?.value ?? '0') },
    });
    const net = p.linux?.network;
    const podLabels = (iface: string): string[] => ['POD', meta?.name ?? '', meta?.namespace ?? '', iface];
    const seconds = (ns: unknown): { value: string } => ({ value: String(BigInt(String(ns ?? '0')) / 1_000_000_000n) });
    return {
      pod_sandbox_id: p.attributes?.id ?? '',
      metrics: (net?.interfaces ?? []).flatMap((i) => [
        metric('container_network_receive_bytes_total', net?.timestamp ?? '0', i.rx_bytes, podLabels(i.name ?? '')),
        metric('container_network_transmit_bytes_total', net?.timestamp ?? '0', i.tx_bytes, podLabels(i.name ?? '')),
      ]),
      container_metrics: (p.linux?.containers ?? []).map((c) => {
        const l = [c.attributes?.metadata?.name ?? '', meta?.name ?? '', meta?.namespace ?? '', ''];
        const ts = c.cpu?.timestamp ?? '0';
        return {
          container_id: c.attributes?.id ?? '',
          metrics: [
            metric('container_cpu_usage_seconds_total', ts, seconds(c.cpu?.usage_core_nano_seconds?.value), l),
            metric('container_memory_working_set_bytes', ts, c.memory?.working_set_bytes, l),
            metric('container_memory_usage_bytes', ts, c.memory?.usage_bytes, l),
            metric('container_memory_rss', ts, c.memory?.rss_bytes, l),
            metric('container_fs_usage_bytes', ts, c.writable_layer?.used_bytes, l),
          ],
        };
      }),
    };
  };

  return {
    async ContainerStats(req: RuntimeReq<'ContainerStats'>, ctx: CallContext) {
      const id = checkId('container_id', req.container_id);
      const [found] = await containerStats({ id, pod_sandbox_id: '', label_selector: {} });
      if (!found) throw notFound(`container ${id}`);
      ctx.annotate({ containerId: found.c.id ?? '' });
      return { stats: toStats(found.c, found.s) };
    },
    async ListContainerStats(req: RuntimeReq<'ListContainerStats'>) {
      return { stats: (await containerStats(req.filter)).map(({ c, s }) => toStats(c, s)) };
    },
    async StreamContainerStats(req: RuntimeReq<'StreamContainerStats'>, _ctx: CallContext, send: (m: RuntimeRes<'StreamContainerStats'>) => Promise<void>) {
      await sendChunks((await containerStats(req.filter)).map(({ c, s }) => toStats(c, s)), (container_stats) => ({ container_stats }), send);
    },
    async PodSandboxStats(req: RuntimeReq<'PodSandboxStats'>, ctx: CallContext) {
      const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
      const [found] = await podStats({ id, label_selector: {} });
      if (!found) throw notFound(`pod sandbox ${id}`);
      ctx.annotate({ podSandboxId: found.attributes?.id ?? '' });
      return { stats: found };
    },
    async ListPodSandboxStats(req: RuntimeReq<'ListPodSandboxStats'>) {
      return { stats: await podStats(req.filter) };
    },
    async StreamPodSandboxStats(req: RuntimeReq<'StreamPodSandboxStats'>, _ctx: CallContext, send: (m: RuntimeRes<'StreamPodSandboxStats'>) => Promise<void>) {
      await sendChunks(await podStats(req.filter), (pod_sandbox_stats) => ({ pod_sandbox_stats }), send);
    },
    async ListMetricDescriptors() {
      return { descriptors: METRIC_DESCRIPTORS.map((d) => ({ name: d.name, help: d.help, label_keys: LABEL_KEYS })) };
    },
    async ListPodSandboxMetrics() {
      return { pod_metrics: (await podStats(null)).map(metricsOf) };
    },
    async StreamPodSandboxMetrics(_req: RuntimeReq<'StreamPodSandboxMetrics'>, _ctx: CallContext, send: (m: RuntimeRes<'StreamPodSandboxMetrics'>) => Promise<void>) {
      await sendChunks((await podStats(null)).map(metricsOf), (pod_sandbox_metrics) => ({ pod_sandbox_metrics }), send);
    },
  };
}
