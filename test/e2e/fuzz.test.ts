/**
 * Randomised requests to every RPC for a bounded time: the daemon must stay
 * up and answer, and must leave no state behind for the requests it refused.
 * The seed is printed so a failure can be replayed (CRISHIM_FUZZ_SEED).
 */
import { promises as fsp } from 'fs';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protobuf from 'protobufjs';
import { PROTO_PATH } from '../../src/server/proto';
import { call, checkpointFiles, codeOf, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(180_000);

const FUZZ_MS = Number(process.env.CRISHIM_FUZZ_MS ?? 15_000);
const SEED = Number(process.env.CRISHIM_FUZZ_SEED ?? Date.now() % 1_000_000);

/** mulberry32: small, seedable, good enough to pick fuzz values. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = rng(SEED);
const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
const hex64 = (): string => Array.from({ length: 64 }, () => '0123456789abcdef'[Math.floor(rand() * 16)]).join('');

// Strings that probe validation. No short hex (a prefix could hit a real container),
// no pullable reference (pulls must never leave loopback).
const STRINGS = (): string[] => [
  '',
  '/',
  '..',
  '../../etc/passwd',
  'a/b',
  'nul\u0000byte',
  'x'.repeat(300),
  'ü∂ƒ©',
  ' spaces ',
  'UPPER',
  '127.0.0.1:1/fuzz:v1',
  'fuzz-name',
  '-1',
  'unix:///etc',
  '{"json":1}',
  hex64(),
  'zzzz',
  'sha256:' + hex64(),
];
const NUMBERS = [0, 1, -1, 2 ** 31 - 1, -(2 ** 31), 65535, 65536, 123456];
const LONGS = ['0', '1', '-1', '9223372036854775807', '-9223372036854775808', '1000000000000'];

function randomValue(field: protobuf.Field, depth: number): unknown {
  const t = field.resolvedType;
  if (t instanceof protobuf.Enum) return pick(Object.keys(t.values));
  if (t instanceof protobuf.Type) return depth > 3 ? null : randomMessage(t, depth + 1);
  switch (field.type) {
    case 'string':
      return pick(STRINGS());
    case 'bytes':
      return Buffer.from(pick(STRINGS()));
    case 'bool':
      return rand() < 0.5;
    case 'int64':
    case 'uint64':
    case 'sint64':
    case 'fixed64':
      return field.type.startsWith('u') || field.type === 'fixed64'
        ? pick(LONGS.filter((l) => !l.startsWith('-')))
        : pick(LONGS);
    case 'uint32':
    case 'fixed32':
      return Math.abs(pick(NUMBERS));
    case 'double':
    case 'float':
      return rand() * 1e6 - 5e5;
    default:
      return pick(NUMBERS);
  }
}

function randomMessage(type: protobuf.Type, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    if (rand() < 0.35) continue;
    field.resolve();
    if (field instanceof protobuf.MapField) {
      const m: Record<string, unknown> = {};
      for (let i = Math.floor(rand() * 3); i > 0; i--) m[pick(STRINGS()) || 'k'] = randomValue(field, depth);
      out[field.name] = m;
    } else if (field.repeated) {
      out[field.name] = Array.from({ length: Math.floor(rand() * 3) }, () => randomValue(field, depth));
    } else {
      out[field.name] = randomValue(field, depth);
    }
  }
  return out;
}

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 213, args: ['--log-level', 'info'] });
});
afterAll(() => teardown(h));

it(`survives ${FUZZ_MS} ms of random requests to every RPC and leaks nothing (seed ${SEED})`, async () => {
  process.stdout.write(`fuzz seed ${SEED}\n`);
  const root = new protobuf.Root();
  root.loadSync(PROTO_PATH, { keepCase: true });
  root.resolveAll();
  const before = {
    sandboxes: new Set(((await call(h.runtime, 'ListPodSandbox', {})).items ?? []).map((s) => s.id)),
    containers: new Set(((await call(h.runtime, 'ListContainers', {})).containers ?? []).map((c) => c.id)),
  };

  const targets: Array<{ client: grpc.Client; method: protobuf.Method }> = [];
  for (const [svc, client] of [
    ['runtime.v1.RuntimeService', h.runtime],
    ['runtime.v1.ImageService', h.image],
  ] as const) {
    for (const m of root.lookupService(svc).methodsArray) targets.push({ client, method: m });
  }
  const codes = new Map<string, number>();
  const odd: string[] = [];
  let calls = 0;
  const deadline = Date.now() + FUZZ_MS;
  const worker = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const { client, method } = pick(targets);
      const req = randomMessage(root.lookupType(method.requestType));
      if (method.name === 'PullImage') req.image = { image: pick(['127.0.0.1:1/fuzz:v1', '', 'a/UPPER', '..']) };
      const fn = (
        client as unknown as Record<
          string,
          (...a: unknown[]) => grpc.ClientUnaryCall | grpc.ClientReadableStream<unknown>
        >
      )[method.name];
      calls++;
      await new Promise<void>((resolve) => {
        const opts = { deadline: Date.now() + 20_000 };
        if (method.responseStream) {
          const s = fn.call(client, req, new grpc.Metadata(), opts) as grpc.ClientReadableStream<unknown>;
          s.on('data', () => undefined);
          s.on('error', (e: grpc.ServiceError) => {
            if (e.code === grpc.status.UNKNOWN || e.code === grpc.status.INTERNAL)
              odd.push(`${method.name}: ${grpc.status[e.code]}: ${e.details}`);
            codes.set(grpc.status[e.code], (codes.get(grpc.status[e.code]) ?? 0) + 1);
            resolve();
          });
          s.on('end', resolve);
          setTimeout(() => s.cancel(), 300);
        } else {
          fn.call(client, req, new grpc.Metadata(), opts, (e: grpc.ServiceError | null) => {
            const code = e ? grpc.status[e.code] : 'OK';
            if (
              e &&
              (e.code === grpc.status.UNKNOWN || e.code === grpc.status.INTERNAL || e.code === grpc.status.UNAVAILABLE)
            )
              odd.push(`${method.name}: ${code}: ${e.details}`);
            codes.set(code, (codes.get(code) ?? 0) + 1);
            resolve();
          });
        }
      });
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  process.stdout.write(`fuzz: ${calls} calls, codes ${JSON.stringify(Object.fromEntries(codes))}\n`);
  if (odd.length) process.stdout.write(`fuzz: unusual answers:\n  ${[...new Set(odd)].slice(0, 20).join('\n  ')}\n`);

  // still up and answering
  expect(h.proc.exitCode).toBeNull();
  expect((await call(h.runtime, 'Version', {})).runtime_name).toBe('docker');
  // no crash-style answers: every failure was a deliberate status (UNKNOWN is an error nobody mapped)
  expect(odd.filter((o) => / (UNKNOWN|INTERNAL): /.test(o))).toEqual([]);
  expect(codes.get('INTERNAL') ?? 0).toBe(0);
  expect(codes.get('UNKNOWN') ?? 0).toBe(0);

  // whatever the random requests managed to create is removable, and then nothing is left
  for (const s of (await call(h.runtime, 'ListPodSandbox', {})).items ?? []) {
    if (before.sandboxes.has(s.id)) continue;
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: s.id ?? '' });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: s.id ?? '' });
  }
  const after = ((await call(h.runtime, 'ListContainers', {})).containers ?? [])
    .map((c) => c.id)
    .filter((id) => !before.containers.has(id));
  expect(after).toEqual([]);
  expect(await checkpointFiles(h)).toEqual([]);
  expect(await fsp.readdir(h.cniCacheDir).catch(() => [])).toEqual([]);
});

it("accepts an 8 MiB request: the 16 MiB limit is ours, not grpc-js's 4 MiB default", async () => {
  // a label selector nothing matches: the call has no side effect whatever its size
  const big = { filter: { label_selector: { 'crishim-fuzz/big': 'x'.repeat(8 * 1024 * 1024) } } };
  const res = await call(h.runtime, 'ListContainers', big);
  expect(res.containers ?? []).toEqual([]);
});

it('refuses oversize messages without harm', async () => {
  const huge = {
    config: { metadata: { name: 'big', namespace: 'n', uid: 'u' }, labels: { big: 'x'.repeat(17 * 1024 * 1024) } },
  };
  const r = await codeOf(call(h.runtime, 'RunPodSandbox', huge));
  expect(r.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  expect((await call(h.runtime, 'Version', {})).runtime_name).toBe('docker');
});

it('keeps its socket and state private', async () => {
  expect((await fsp.stat(h.socket)).mode & 0o007).toBe(0);
  expect((await fsp.stat(h.rootDir)).mode & 0o077).toBe(0);
  expect((await fsp.stat(path.join(h.rootDir, 'sandbox'))).mode & 0o077).toBe(0);
});
