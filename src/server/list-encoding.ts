import type * as grpc from '@grpc/grpc-js';
import type * as protobuf from 'protobufjs';
import { criProtoRoot } from './proto';
import { varint32 } from './proto-writer';

/**
 * The List answers the kubelet polls every second are one repeated message
 * field (number 1) whose entries the handlers keep per state-view entry (see
 * state/summary.ts `memoized`): the same object until the container changes.
 * Each entry's protobuf bytes are kept beside it, so a relist encodes only
 * what changed and joins the rest, and the joined answer beside the array it
 * was made of; the bytes are what the generic serializer
 * would produce, since a repeated message field is just its entries' encodings
 * one after another, each behind its tag and length.
 */
const CACHED_LISTS: Record<string, { field: string; item: string }> = {
  ListContainers: { field: 'containers', item: 'runtime.v1.Container' },
  ListPodSandbox: { field: 'items', item: 'runtime.v1.PodSandbox' },
};

/** Field 1, wire type 2 (length-delimited). */
const FIELD_1_TAG = 0x0a;

/** Tag, length and message in a buffer of its own: a slice of Node's shared pool would keep a whole 8 KiB slab alive per entry. */
function entryBytes(raw: Uint8Array): Buffer {
  // a length's varint takes at most 5 bytes
  const out = Buffer.allocUnsafeSlow(1 + 5 + raw.length);
  out[0] = FIELD_1_TAG;
  const at = varint32(out, 1, raw.length);
  out.set(raw, at);
  return out.subarray(0, at + raw.length);
}

/** A serializer for `{ [field]: item[] }` answers that encodes each item object once. */
export function cachedListSerializer(
  itemType: protobuf.Type,
  field: string,
  fallback: (value: unknown) => Buffer,
): (value: unknown) => Buffer {
  const encoded = new WeakMap<object, Buffer>();
  // whole answers by their items array: an unfiltered List returns the same array until something
  // changes (sandbox/list.ts), so a relist's answer is one lookup
  const answers = new WeakMap<unknown[], Buffer>();
  return (value) => {
    const res = value as Record<string, unknown> | null;
    const items = res?.[field];
    // anything but the plain shape the handlers return goes the generic way
    if (!Array.isArray(items) || Object.keys(res ?? {}).length !== 1) return fallback(value);
    const known = answers.get(items);
    if (known) return known;
    const parts: Buffer[] = [];
    for (const item of items as unknown[]) {
      if (typeof item !== 'object' || item === null) return fallback(value);
      let bytes = encoded.get(item);
      if (!bytes) {
        const raw = itemType.encode(itemType.fromObject(item as Record<string, unknown>)).finish();
        bytes = entryBytes(raw);
        encoded.set(item, bytes);
      }
      parts.push(bytes);
    }
    const answer = Buffer.concat(parts);
    answers.set(items, answer);
    return answer;
  };
}

/** The service definition with the cached serializer on the List methods it knows. */
export function withCachedListEncoding(definition: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...definition };
  for (const [method, { field, item }] of Object.entries(CACHED_LISTS)) {
    const def = definition[method];
    if (!def) continue;
    out[method] = {
      ...def,
      responseSerialize: cachedListSerializer(criProtoRoot().lookupType(item), field, def.responseSerialize),
    };
  }
  return out;
}
