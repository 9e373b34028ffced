import type { RuntimeRes } from '../server/rpc';
import type { PodSample, Sample } from '../stats/collector';
import type { InterfaceUsage } from '../stats/netdev';
import type { CgroupUsage } from '../stats/usage';

export type CriContainer = NonNullable<RuntimeRes<'ListContainers'>['containers']>[number];
export type CriSandbox = NonNullable<RuntimeRes<'ListPodSandbox'>['items']>[number];
export type CriContainerStats = NonNullable<RuntimeRes<'ContainerStats'>['stats']>;
export type CriPodStats = NonNullable<RuntimeRes<'PodSandboxStats'>['stats']>;
type CriMemory = NonNullable<CriContainerStats['memory']>;
type CriNetwork = NonNullable<NonNullable<CriPodStats['linux']>['network']>;
type CriInterface = NonNullable<CriNetwork['default_interface']>;

/** A container with its reading. */
export interface ContainerView {
  c: CriContainer;
  s: Sample;
}

/** A pod with its pod-level reading and its containers' (what both stats and metrics are built from). */
export interface PodView {
  sb: CriSandbox;
  pod: PodSample;
  members: ContainerView[];
}

type U64 = { value: number | string } | null;
const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);
/**
 * A CRI UInt64Value. A number where it is exact: protobufjs turns a decimal string into its
 * Long by long multiplication (a dozen objects per field, hundreds of fields per stats call),
 * a number in one step. Only a bigint past 2^53 (CPU ns of a long-lived big host) stays a string.
 */
export const u64 = (v: number | bigint | undefined): U64 => {
  if (v === undefined) return null;
  if (typeof v === 'number') return { value: v };
  return { value: v <= MAX_EXACT ? Number(v) : String(v) };
};

function memory(ts: string, u: CgroupUsage): CriMemory {
  return {
    timestamp: ts,
    working_set_bytes: u64(u.workingSet ?? 0),
    // only meaningful under a limit (the kubelet's eviction and `kubectl top` read it that way)
    available_bytes: u.memoryLimit !== undefined ? u64(Math.max(0, u.memoryLimit - (u.workingSet ?? 0))) : null,
    usage_bytes: u64(u.memoryUsage ?? 0),
    rss_bytes: u64(u.rss ?? 0),
    page_faults: u64(u.pageFaults ?? 0),
    major_page_faults: u64(u.majorPageFaults ?? 0),
  };
}

/**
 * CPU: the cumulative counter is always set (0 for a container that is not
 * running); the rate is null when there is none yet, which lets the kubelet
 * fall back to computing it from two cumulative readings itself.
 */
function cpu(ts: string, u: CgroupUsage, nanoCores: number | undefined): NonNullable<CriContainerStats['cpu']> {
  return { timestamp: ts, usage_core_nano_seconds: u64(u.cpuUsageNanos ?? 0n), usage_nano_cores: u64(nanoCores) };
}

/**
 * One attributes object per listed container or sandbox (those are kept per state-view entry):
 * the stats serializer keeps each one's encoded bytes (server/stats-encoding.ts).
 */
type Attributes<X> = Pick<X, Extract<'id' | 'metadata' | 'labels' | 'annotations', keyof X>>;
const attributes = new WeakMap<CriContainer | CriSandbox, Attributes<CriContainer | CriSandbox>>();
function attributesOf<X extends CriContainer | CriSandbox>(x: X): Attributes<X> {
  let a = attributes.get(x);
  if (!a) {
    a = { id: x.id, metadata: x.metadata, labels: x.labels, annotations: x.annotations };
    attributes.set(x, a);
  }
  return a as Attributes<X>;
}

export function toContainerStats({ c, s }: ContainerView, mountpoint: string): CriContainerStats {
  return {
    attributes: attributesOf(c),
    cpu: cpu(s.timestamp, s.usage, s.nanoCores),
    memory: memory(s.timestamp, s.usage),
    writable_layer: {
      timestamp: s.timestamp,
      fs_id: { mountpoint },
      used_bytes: u64(s.writable?.bytes ?? 0),
      inodes_used: u64(s.writable?.inodes ?? 0),
    },
  };
}

function iface(i: InterfaceUsage): CriInterface {
  return {
    name: i.name,
    rx_bytes: u64(i.rxBytes),
    rx_errors: u64(i.rxErrors),
    tx_bytes: u64(i.txBytes),
    tx_errors: u64(i.txErrors),
  };
}

/**
 * A pod's network usage, or null when its netns has no interface to report (before CNI ADD,
 * after CNI DEL): a kubelet reads `default_interface` whenever `network` is set (1.26 panics on
 * a missing one), so network is never sent without it.
 */
export function toNetwork(ts: string, ifaces: InterfaceUsage[] | undefined): CriNetwork | null {
  // eth0 is the interface CNI plugins (and the kubelet's default-interface logic) name the pod's
  const def = ifaces?.find((i) => i.name === 'eth0') ?? ifaces?.[0];
  if (!ifaces || !def) return null;
  return { timestamp: ts, default_interface: iface(def), interfaces: ifaces.map(iface) };
}

export function toPodStats(v: PodView, mountpoint: string): CriPodStats {
  const { sb, pod } = v;
  return {
    attributes: attributesOf(sb),
    linux: {
      cpu: cpu(pod.timestamp, pod.usage, pod.nanoCores),
      memory: memory(pod.timestamp, pod.usage),
      network: toNetwork(pod.timestamp, pod.network),
      process: { timestamp: pod.timestamp, process_count: u64(pod.usage.pids ?? 0) },
      containers: v.members.map((m) => toContainerStats(m, mountpoint)),
    },
  };
}
