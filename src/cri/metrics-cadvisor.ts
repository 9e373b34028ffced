import type { RuntimeRes } from '../server/rpc';
import type { CgroupUsage } from '../stats/usage';
import { u64, type ContainerView, type PodView } from './stats-convert';

type PodMetrics = NonNullable<RuntimeRes<'ListPodSandboxMetrics'>['pod_metrics']>[number];
type Metric = NonNullable<PodMetrics['metrics']>[number];
type Descriptor = NonNullable<RuntimeRes<'ListMetricDescriptors'>['descriptors']>[number];

/** Labels every cAdvisor container family carries (cAdvisor's `name`, the Docker name, is not in CRI's view). */
const BASE = ['container', 'id', 'image', 'namespace', 'pod'] as const;

interface Family {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE';
  /** Extra labels after the base ones. */
  extra?: readonly string[];
}

/**
 * The cAdvisor families the kubelet re-exports on /metrics/cadvisor, built from
 * the same readings as the stats RPCs. CRI metric values are unsigned
 * integers, so CPU seconds are whole seconds (a rate over a scrape interval of
 * minutes stays meaningful; use ContainerStats' nanocores for fine CPU use).
 */
export const FAMILIES: readonly Family[] = [
  { name: 'container_cpu_usage_seconds_total', help: 'Cumulative cpu time consumed in seconds.', type: 'COUNTER' },
  { name: 'container_memory_working_set_bytes', help: 'Current working set in bytes.', type: 'GAUGE' },
  {
    name: 'container_memory_usage_bytes',
    help: 'Current memory usage in bytes, including all memory regardless of when it was accessed.',
    type: 'GAUGE',
  },
  { name: 'container_memory_rss', help: 'Size of RSS in bytes.', type: 'GAUGE' },
  {
    name: 'container_memory_failures_total',
    help: 'Cumulative count of memory allocation failures.',
    type: 'COUNTER',
    extra: ['failure_type', 'scope'],
  },
  { name: 'container_spec_memory_limit_bytes', help: 'Memory limit for the container.', type: 'GAUGE' },
  { name: 'container_processes', help: 'Number of processes running inside the container.', type: 'GAUGE' },
  {
    name: 'container_fs_usage_bytes',
    help: 'Number of bytes that are consumed by the container on this filesystem.',
    type: 'GAUGE',
    extra: ['device'],
  },
  {
    name: 'container_fs_inodes_used',
    help: 'Number of inodes used by the container on this filesystem.',
    type: 'GAUGE',
    extra: ['device'],
  },
  {
    name: 'container_network_receive_bytes_total',
    help: 'Cumulative count of bytes received.',
    type: 'COUNTER',
    extra: ['interface'],
  },
  {
    name: 'container_network_transmit_bytes_total',
    help: 'Cumulative count of bytes transmitted.',
    type: 'COUNTER',
    extra: ['interface'],
  },
  {
    name: 'container_network_receive_errors_total',
    help: 'Cumulative count of errors encountered while receiving.',
    type: 'COUNTER',
    extra: ['interface'],
  },
  {
    name: 'container_network_transmit_errors_total',
    help: 'Cumulative count of errors encountered while transmitting.',
    type: 'COUNTER',
    extra: ['interface'],
  },
];
const byName = new Map(FAMILIES.map((f) => [f.name, f]));

export function labelKeys(f: Family): string[] {
  return [...BASE, ...(f.extra ?? [])];
}

export function metricDescriptors(): Descriptor[] {
  return FAMILIES.map((f) => ({ name: f.name, help: f.help, label_keys: labelKeys(f) }));
}

function metric(name: string, timestamp: string, value: number | bigint, labels: string[]): Metric {
  const f = byName.get(name);
  if (!f) throw new Error(`unknown metric family ${name}`);
  return { name, timestamp, metric_type: f.type, label_values: labels, value: u64(value) };
}

function usageMetrics(ts: string, u: CgroupUsage, labels: string[]): Metric[] {
  const out: Metric[] = [];
  const add = (name: string, v: number | bigint | undefined): void => {
    if (v !== undefined) out.push(metric(name, ts, v, labels));
  };
  add(
    'container_cpu_usage_seconds_total',
    u.cpuUsageNanos === undefined ? undefined : u.cpuUsageNanos / 1_000_000_000n,
  );
  add('container_memory_working_set_bytes', u.workingSet);
  add('container_memory_usage_bytes', u.memoryUsage);
  add('container_memory_rss', u.rss);
  // cAdvisor's spelling: page faults are "failures" told apart by failure_type
  for (const [type, v] of [
    ['pgfault', u.pageFaults],
    ['pgmajfault', u.majorPageFaults],
  ] as const) {
    if (v !== undefined) out.push(metric('container_memory_failures_total', ts, v, [...labels, type, 'container']));
  }
  add('container_spec_memory_limit_bytes', u.memoryLimit);
  add('container_processes', u.pids);
  return out;
}

function containerMetrics(v: PodView, m: ContainerView, mountpoint: string): Metric[] {
  const { s, c } = m;
  const labels = [
    c.metadata?.name ?? '',
    c.id ?? '',
    c.image?.image ?? '',
    v.sb.metadata?.namespace ?? '',
    v.sb.metadata?.name ?? '',
  ];
  const out = usageMetrics(s.timestamp, s.usage, labels);
  if (s.writable) {
    out.push(metric('container_fs_usage_bytes', s.timestamp, s.writable.bytes, [...labels, mountpoint]));
    out.push(metric('container_fs_inodes_used', s.timestamp, s.writable.inodes, [...labels, mountpoint]));
  }
  return out;
}

/**
 * One pod's metrics, labelled as cAdvisor labels them: the pod's totals with
 * container="" (so `container!=""` queries do not count them twice), its
 * network with container="POD" (the netns belongs to the pause container);
 * per-container series sit in container_metrics.
 */
export function podMetrics(v: PodView, mountpoint: string): PodMetrics {
  const { sb, pod } = v;
  const podLabels = (container: string): string[] => [
    container,
    sb.id ?? '',
    '',
    sb.metadata?.namespace ?? '',
    sb.metadata?.name ?? '',
  ];
  const netLabels = (iface: string): string[] => [...podLabels('POD'), iface];
  const net = (pod.network ?? []).flatMap((i) => [
    metric('container_network_receive_bytes_total', pod.timestamp, i.rxBytes, netLabels(i.name)),
    metric('container_network_transmit_bytes_total', pod.timestamp, i.txBytes, netLabels(i.name)),
    metric('container_network_receive_errors_total', pod.timestamp, i.rxErrors, netLabels(i.name)),
    metric('container_network_transmit_errors_total', pod.timestamp, i.txErrors, netLabels(i.name)),
  ]);
  return {
    pod_sandbox_id: sb.id ?? '',
    metrics: [...usageMetrics(pod.timestamp, pod.usage, podLabels('')), ...net],
    container_metrics: v.members.map((m) => ({
      container_id: m.c.id ?? '',
      metrics: containerMetrics(v, m, mountpoint),
    })),
  };
}
