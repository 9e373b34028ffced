import type * as grpc from '@grpc/grpc-js';
import { criProtoRoot } from './proto';
import { ProtoWriter } from './proto-writer';

/**
 * Hand-written encoders for the stats answers the kubelet asks for every 10 s
 * (ListContainerStats, ListPodSandboxStats). Profiled at 110 pods, the generic path
 * (protobufjs fromObject, then encode) was an eighth of a stats call's CPU and much of
 * its garbage: it rebuilds every message, turns each decimal int64 timestamp into a Long,
 * and re-encodes every container's labels and annotations although they never change.
 * Here the numbers go straight to the writer, a timestamp's varint is worked out once
 * per distinct value, and each attributes message (the handlers keep one object per
 * container, see cri/stats-convert.ts) is encoded once and its bytes kept. Decoding
 * the result gives what the generic serializer's bytes give (test/unit/stats-encoding).
 * Anything these encoders do not know (swap, io, psi, windows, a new field) makes the
 * whole answer go the generic way.
 */

type Obj = Record<string, unknown>;
type W = ProtoWriter;

class Unsupported extends Error {}

/** Refuses an object with a set field this encoder does not write. */
function only(o: Obj, known: ReadonlySet<string>): void {
  for (const k in o) if (o[k] !== null && o[k] !== undefined && !known.has(k)) throw new Unsupported(k);
}
const keys = (...k: string[]): ReadonlySet<string> => new Set(k);

const LD = 2;

/** Low and high 32 bits of a non-negative decimal int64, as ProtoWriter.uintLong takes them. */
const longs = new Map<string, { low: number; high: number }>();
function longOf(s: string): { low: number; high: number } {
  let v = longs.get(s);
  if (!v) {
    if (!/^\d{1,20}$/.test(s)) throw new Unsupported(`int64 ${s}`);
    const b = BigInt(s);
    if (b >= 1n << 64n) throw new Unsupported(`int64 ${s}`);
    v = { low: Number(b & 0xffffffffn), high: Number(b >> 32n) };
    // a stats call's timestamps share a few milliseconds: a small cache covers them
    if (longs.size >= 256) longs.clear();
    longs.set(s, v);
  }
  return v;
}

/** A uint64/int64 value: a number (exact below 2^53) or a decimal string. */
function writeU64(w: W, field: number, v: unknown): void {
  if (typeof v === 'number') {
    if (!Number.isInteger(v) || v < 0 || v > Number.MAX_SAFE_INTEGER) throw new Unsupported(`uint64 ${v}`);
    if (v === 0) return;
    w.tag(field, 0).uint(v);
    return;
  }
  if (typeof v === 'string') {
    if (v === '0' || v === '') return;
    const { low, high } = longOf(v);
    w.tag(field, 0).uintLong(low, high);
    return;
  }
  if (v !== undefined && v !== null) throw new Unsupported(`uint64 ${typeof v}`);
}

const VALUE = keys('value');
/** A google-style UInt64Value wrapper: absent when null. */
function writeWrapped(w: W, field: number, v: unknown): void {
  if (v === null || v === undefined) return;
  const o = v as Obj;
  only(o, VALUE);
  const m = w.tag(field, LD).begin();
  writeU64(w, 1, o.value);
  w.end(m);
}

function writeString(w: W, field: number, s: unknown): void {
  if (s === undefined || s === null || s === '') return;
  if (typeof s !== 'string') throw new Unsupported('string');
  w.tag(field, LD).string(s);
}

/** A sub-message through `body`; absent when null. */
function writeMessage(w: W, field: number, v: unknown, body: (w: W, o: Obj) => void): void {
  if (v === null || v === undefined) return;
  const m = w.tag(field, LD).begin();
  body(w, v as Obj);
  w.end(m);
}

/** Encoded attributes per attributes object (the same object while the container is the same). */
function cachedAttributes(typeName: string): (w: W, field: number, v: unknown) => void {
  const type = criProtoRoot().lookupType(typeName);
  const bytes = new WeakMap<object, Uint8Array>();
  return (w, field, v) => {
    if (v === null || v === undefined) return;
    if (typeof v !== 'object') throw new Unsupported('attributes');
    let b = bytes.get(v);
    if (!b) {
      b = type.encode(type.fromObject(v as Obj)).finish();
      bytes.set(v, b);
    }
    w.tag(field, LD).bytes(b);
  };
}

const CPU = keys('timestamp', 'usage_core_nano_seconds', 'usage_nano_cores');
function cpu(w: W, o: Obj): void {
  only(o, CPU);
  writeU64(w, 1, o.timestamp);
  writeWrapped(w, 2, o.usage_core_nano_seconds);
  writeWrapped(w, 3, o.usage_nano_cores);
}

const MEMORY_FIELDS = [
  'working_set_bytes',
  'available_bytes',
  'usage_bytes',
  'rss_bytes',
  'page_faults',
  'major_page_faults',
] as const;
const MEMORY = keys('timestamp', ...MEMORY_FIELDS);
function memory(w: W, o: Obj): void {
  only(o, MEMORY);
  writeU64(w, 1, o.timestamp);
  for (let i = 0; i < MEMORY_FIELDS.length; i++) writeWrapped(w, i + 2, o[MEMORY_FIELDS[i]]);
}

const FS_ID = keys('mountpoint');
const FS = keys('timestamp', 'fs_id', 'used_bytes', 'inodes_used');
function filesystem(w: W, o: Obj): void {
  only(o, FS);
  writeU64(w, 1, o.timestamp);
  writeMessage(w, 2, o.fs_id, (w2, id) => {
    only(id, FS_ID);
    writeString(w2, 1, id.mountpoint);
  });
  writeWrapped(w, 3, o.used_bytes);
  writeWrapped(w, 4, o.inodes_used);
}

const containerAttributes = cachedAttributes('runtime.v1.ContainerAttributes');
const CONTAINER = keys('attributes', 'cpu', 'memory', 'writable_layer');
function containerStats(w: W, o: Obj): void {
  only(o, CONTAINER);
  containerAttributes(w, 1, o.attributes);
  writeMessage(w, 2, o.cpu, cpu);
  writeMessage(w, 3, o.memory, memory);
  writeMessage(w, 4, o.writable_layer, filesystem);
}

const IFACE = keys('name', 'rx_bytes', 'rx_errors', 'tx_bytes', 'tx_errors');
function iface(w: W, o: Obj): void {
  only(o, IFACE);
  writeString(w, 1, o.name);
  writeWrapped(w, 2, o.rx_bytes);
  writeWrapped(w, 3, o.rx_errors);
  writeWrapped(w, 4, o.tx_bytes);
  writeWrapped(w, 5, o.tx_errors);
}

function repeated(w: W, field: number, v: unknown, body: (w: W, o: Obj) => void): void {
  if (v === null || v === undefined) return;
  if (!Array.isArray(v)) throw new Unsupported('repeated');
  for (const item of v) {
    if (typeof item !== 'object' || item === null) throw new Unsupported('repeated item');
    writeMessage(w, field, item, body);
  }
}

const NETWORK = keys('timestamp', 'default_interface', 'interfaces');
function network(w: W, o: Obj): void {
  only(o, NETWORK);
  writeU64(w, 1, o.timestamp);
  writeMessage(w, 2, o.default_interface, iface);
  repeated(w, 3, o.interfaces, iface);
}

const PROCESS = keys('timestamp', 'process_count');
function processUsage(w: W, o: Obj): void {
  only(o, PROCESS);
  writeU64(w, 1, o.timestamp);
  writeWrapped(w, 2, o.process_count);
}

const LINUX = keys('cpu', 'memory', 'network', 'process', 'containers');
function linux(w: W, o: Obj): void {
  only(o, LINUX);
  writeMessage(w, 1, o.cpu, cpu);
  writeMessage(w, 2, o.memory, memory);
  writeMessage(w, 3, o.network, network);
  writeMessage(w, 4, o.process, processUsage);
  repeated(w, 5, o.containers, containerStats);
}

const podAttributes = cachedAttributes('runtime.v1.PodSandboxAttributes');
const POD = keys('attributes', 'linux');
function podStats(w: W, o: Obj): void {
  only(o, POD);
  podAttributes(w, 1, o.attributes);
  writeMessage(w, 2, o.linux, linux);
}

const RESPONSE = keys('stats');
/** One writer for every answer: a serializer runs to the end before the next starts. */
const scratch = new ProtoWriter();
/** A serializer for `{ stats: [...] }` answers of one of the stats RPCs; the generic one for anything it does not know. */
export function statsSerializer(
  kind: 'container' | 'pod',
  fallback: (value: unknown) => Buffer,
): (value: unknown) => Buffer {
  const item = kind === 'container' ? containerStats : podStats;
  return (value) => {
    if (typeof value !== 'object' || value === null) return fallback(value);
    try {
      only(value as Obj, RESPONSE);
      repeated(scratch.reset(), 1, (value as Obj).stats, item);
      return scratch.finish();
    } catch (err) {
      if (err instanceof Unsupported) return fallback(value);
      throw err;
    }
  };
}

/** The service definition with the hand-written serializers on the two stats List methods. */
export function withStatsEncoding(definition: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...definition };
  for (const [method, kind] of [
    ['ListContainerStats', 'container'],
    ['ListPodSandboxStats', 'pod'],
  ] as const) {
    const def = definition[method];
    if (def) out[method] = { ...def, responseSerialize: statsSerializer(kind, def.responseSerialize) };
  }
  return out;
}
