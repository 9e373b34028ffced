import type * as grpc from '@grpc/grpc-js';
import { cachedListSerializer, withCachedListEncoding } from '../../src/server/list-encoding';
import { criProtoRoot } from '../../src/server/proto';
import { loadCriProto } from '../support/cri-proto';

const service = loadCriProto().runtime.v1.RuntimeService.service as unknown as grpc.ServiceDefinition;

const container = (n: number): Record<string, unknown> => ({
  id: `${n}`.padStart(64, 'c'),
  pod_sandbox_id: 'p'.repeat(64),
  metadata: { name: `app-${n}`, attempt: n },
  image: { image: 'busybox:latest' },
  image_ref: 'sha256:' + 'f'.repeat(64),
  image_id: 'sha256:' + 'f'.repeat(64),
  state: n % 2 ? 'CONTAINER_RUNNING' : 'CONTAINER_EXITED',
  created_at: '1700000000123456789',
  labels: { app: 'web', n: String(n) },
  // long enough that its length takes a two-byte varint
  annotations: { note: 'x'.repeat(300) },
});

describe('List answers encoded from per-entry bytes', () => {
  const generic = service.ListContainers.responseSerialize;
  const cached = withCachedListEncoding(service).ListContainers.responseSerialize;

  it('produces the generic serializer’s bytes, every time, and they decode to the same containers', () => {
    const containers = Array.from({ length: 5 }, (_, i) => container(i));
    const answer = { containers };
    const expected = generic(answer);
    expect(cached(answer)).toEqual(expected);
    // second time from the kept bytes, in another order and subset
    const again = { containers: [containers[3], containers[0]] };
    expect(cached(again)).toEqual(generic(again));
    expect(cached({ containers: [] })).toEqual(generic({ containers: [] }));
    const decoded = service.ListContainers.responseDeserialize(cached(answer)) as {
      containers: Array<{ id: string; labels: Record<string, string> }>;
    };
    expect(decoded.containers.map((c) => [c.id, c.labels.n])).toEqual(
      containers.map((c) => [c.id, (c.labels as Record<string, string>).n]),
    );
  });

  it('keeps a whole answer beside its items array, so an unchanged relist is not joined again', () => {
    const containers = Array.from({ length: 3 }, (_, i) => container(i));
    const first = cached({ containers });
    expect(cached({ containers })).toBe(first);
    // another array with other entries: its own bytes, not the kept ones
    const other = [containers[2]];
    expect(cached({ containers: other })).toEqual(generic({ containers: other }));
    expect(cached({ containers })).toBe(first);
  });

  it('encodes sandboxes the same way', () => {
    const items = [
      {
        id: 's'.repeat(64),
        metadata: { name: 'web', namespace: 'default', uid: 'u', attempt: 1 },
        state: 'SANDBOX_READY',
        created_at: '1',
        labels: { a: 'b' },
        annotations: {},
        runtime_handler: '',
      },
    ];
    const serialize = withCachedListEncoding(service).ListPodSandbox.responseSerialize;
    expect(serialize({ items })).toEqual(service.ListPodSandbox.responseSerialize({ items }));
  });

  it('hands any other shape to the generic serializer', () => {
    const fallback = jest.fn(() => Buffer.from('generic'));
    const serialize = cachedListSerializer(criProtoRoot().lookupType('runtime.v1.Container'), 'containers', fallback);
    expect(serialize({ containers: [container(1)], extra: 1 }).toString()).toBe('generic');
    expect(serialize({ containers: 'nope' }).toString()).toBe('generic');
    expect(fallback).toHaveBeenCalledTimes(2);
  });
});
