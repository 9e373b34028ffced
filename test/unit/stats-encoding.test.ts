import type * as grpc from '@grpc/grpc-js';
import { loadCriProto } from '../support/cri-proto';
import { statsSerializer, withStatsEncoding } from '../../src/server/stats-encoding';

const service = loadCriProto().runtime.v1.RuntimeService.service as unknown as grpc.ServiceDefinition;
const ctr = service.ListContainerStats;
const pod = service.ListPodSandboxStats;
const fast = withStatsEncoding(service);

const u = (value: number | string): { value: number | string } => ({ value });
const TS = '1763980000123000000';

const container = (n: number): Record<string, unknown> => ({
  attributes: {
    id: `${n}`.padStart(64, 'c'),
    metadata: { name: `app-${n}`, attempt: n },
    labels: { app: 'web', n: String(n) },
    // long enough that its length takes a two-byte varint
    annotations: { note: 'x'.repeat(300), ünï: 'çødé' },
  },
  cpu: { timestamp: TS, usage_core_nano_seconds: u(n * 1_000_003), usage_nano_cores: n % 2 ? null : u(n) },
  memory: {
    timestamp: TS,
    working_set_bytes: u(4096 * n),
    available_bytes: n % 3 ? null : u(2 ** 33 + n),
    usage_bytes: u(0),
    rss_bytes: u(5_000_000_000),
    page_faults: u('18446744073709551615'),
    major_page_faults: u('9007199254740993'),
  },
  writable_layer: { timestamp: TS, fs_id: { mountpoint: '/var/lib/docker' }, used_bytes: u(8192), inodes_used: u(3) },
});

const podStats = (n: number): Record<string, unknown> => ({
  attributes: {
    id: `${n}`.padStart(64, 's'),
    metadata: { name: `web-${n}`, uid: `uid-${n}`, namespace: 'default', attempt: 1 },
    labels: { app: 'web' },
    annotations: {},
  },
  linux: {
    cpu: { timestamp: TS, usage_core_nano_seconds: u(0), usage_nano_cores: null },
    memory: {
      timestamp: TS,
      working_set_bytes: u(1),
      available_bytes: null,
      usage_bytes: u(2),
      rss_bytes: u(3),
      page_faults: u(4),
      major_page_faults: u(5),
    },
    network:
      n % 2
        ? null
        : {
            timestamp: TS,
            default_interface: { name: 'eth0', rx_bytes: u(10), rx_errors: u(0), tx_bytes: u(20), tx_errors: u(1) },
            interfaces: [
              { name: 'eth0', rx_bytes: u(10), rx_errors: u(0), tx_bytes: u(20), tx_errors: u(1) },
              { name: 'net1', rx_bytes: u(2 ** 40), rx_errors: u(0), tx_bytes: u(0), tx_errors: u(0) },
            ],
          },
    process: { timestamp: TS, process_count: u(n) },
    containers: [container(n), container(n + 1)],
  },
});

const decodeCtr = (b: Buffer): unknown => ctr.responseDeserialize(b);
const decodePod = (b: Buffer): unknown => pod.responseDeserialize(b);

describe('hand-written stats encoders', () => {
  it('ListContainerStats: the bytes decode to what the generic serializer’s decode to', () => {
    const answer = { stats: Array.from({ length: 6 }, (_, i) => container(i)) };
    const bytes = fast.ListContainerStats.responseSerialize(answer);
    expect(decodeCtr(bytes)).toEqual(decodeCtr(ctr.responseSerialize(answer)));
    // a second time, attributes from the kept bytes, other numbers
    const again = {
      stats: [answer.stats[2], { ...answer.stats[0], cpu: { timestamp: '5', usage_core_nano_seconds: u(7) } }],
    };
    expect(decodeCtr(fast.ListContainerStats.responseSerialize(again))).toEqual(
      decodeCtr(ctr.responseSerialize(again)),
    );
    const decoded = decodeCtr(bytes) as { stats: Array<{ memory: { page_faults: { value: string } } }> };
    expect(decoded.stats[0].memory.page_faults.value).toBe('18446744073709551615');
    expect(fast.ListContainerStats.responseSerialize({ stats: [] })).toEqual(ctr.responseSerialize({ stats: [] }));
  });

  it('ListPodSandboxStats: the same, networks and member containers included', () => {
    const answer = { stats: Array.from({ length: 4 }, (_, i) => podStats(i)) };
    const bytes = fast.ListPodSandboxStats.responseSerialize(answer);
    expect(decodePod(bytes)).toEqual(decodePod(pod.responseSerialize(answer)));
    const decoded = decodePod(bytes) as {
      stats: Array<{ linux: { network: { interfaces: Array<{ name: string; rx_bytes: { value: string } }> } } }>;
    };
    expect(decoded.stats[0].linux.network.interfaces[1]).toMatchObject({
      name: 'net1',
      rx_bytes: { value: String(2 ** 40) },
    });
  });

  it('sees a changed attributes object (a new container), not stale bytes', () => {
    const c = container(1);
    const serialize = statsSerializer('container', ctr.responseSerialize);
    serialize({ stats: [c] });
    const renamed = { ...c, attributes: { ...(c.attributes as object), id: 'z'.repeat(64) } };
    const decoded = decodeCtr(serialize({ stats: [renamed] })) as { stats: Array<{ attributes: { id: string } }> };
    expect(decoded.stats[0].attributes.id).toBe('z'.repeat(64));
  });

  it('leaves what it does not know to the generic serializer', () => {
    const fallback = jest.fn(ctr.responseSerialize);
    const serialize = statsSerializer('container', fallback);
    const withSwap = { stats: [{ ...container(1), swap: { timestamp: TS, swap_usage_bytes: u(1) } }] };
    expect(decodeCtr(serialize(withSwap))).toEqual(decodeCtr(ctr.responseSerialize(withSwap)));
    expect(fallback).toHaveBeenCalledTimes(1);
    serialize({ stats: [container(2)] });
    expect(fallback).toHaveBeenCalledTimes(1);
    const negative = { stats: [{ ...container(3), cpu: { timestamp: '-1', usage_core_nano_seconds: u(1) } }] };
    expect(decodeCtr(serialize(negative))).toEqual(decodeCtr(ctr.responseSerialize(negative)));
    expect(fallback).toHaveBeenCalledTimes(2);
  });
});
