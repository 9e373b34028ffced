import { readFileSync } from 'fs';
import * as path from 'path';
import Ajv from 'ajv';
import { compileSchemaCheck } from '../../src/checkpoint/schema-check';

const schema = JSON.parse(
  readFileSync(path.join(__dirname, '..', '..', 'checkpoints', 'sandbox-checkpoint.v1.schema.json'), 'utf8'),
) as Record<string, unknown>;
/** The reference: what the daemon used before, a general JSON Schema validator. */
const ajv = new Ajv({ allErrors: true, allowUnionTypes: true }).compile(schema);
const ours = compileSchemaCheck(schema);

const valid = {
  version: 'v1',
  name: 'web',
  namespace: 'default',
  data: {
    port_mappings: [{ protocol: 'TCP', container_port: 80, host_port: 8080, host_ip: '127.0.0.1' }],
    host_network: false,
  },
  crishim: {
    sandbox_id: 'a'.repeat(64),
    uid: 'u-1',
    attempt: 0,
    created_at: '1700000000123456789',
    runtime_handler: '',
    phase: 'ready',
    labels: { app: 'web' },
    annotations: { note: 'x' },
  },
  checksum: 'f'.repeat(64),
};

type Json = Record<string, unknown>;
const clone = (): Json => JSON.parse(JSON.stringify(valid)) as Json;
const crishimOf = (v: Json): Json => v.crishim as Json;
const dataOf = (v: Json): Json => v.data as Json;

/** One change each: every keyword the schema uses, broken and kept. */
const variants: Array<[string, (v: Json) => void]> = [
  ['valid as is', () => undefined],
  ['cri-dockerd file: integer checksum, no crishim part', (v) => ((v.checksum = 12345), delete v.crishim)],
  ['port_mappings null', (v) => (dataOf(v).port_mappings = null)],
  ['data without fields', (v) => (v.data = {})],
  ['unknown top-level field', (v) => (v.extra = { any: 1 })],
  ['field named like an Object prototype member', (v) => Object.assign(v, { constructor: 1 })],
  ['version v2', (v) => (v.version = 'v2')],
  ['version missing', (v) => delete v.version],
  ['checksum missing', (v) => delete v.checksum],
  ['checksum a float', (v) => (v.checksum = 1.5)],
  ['checksum a boolean', (v) => (v.checksum = true)],
  ['name empty', (v) => (v.name = '')],
  ['name a number', (v) => (v.name = 3)],
  ['namespace null', (v) => (v.namespace = null)],
  ['data an array', (v) => (v.data = [])],
  ['port_mappings an object', (v) => (dataOf(v).port_mappings = {})],
  ['port mapping a string', (v) => (dataOf(v).port_mappings = ['80:80'])],
  ['container_port a string', (v) => ((dataOf(v).port_mappings as Json[])[0].container_port = '80')],
  ['host_port a float', (v) => ((dataOf(v).port_mappings as Json[])[0].host_port = 80.5)],
  ['host_network a string', (v) => (dataOf(v).host_network = 'false')],
  ['crishim null', (v) => (v.crishim = null)],
  ['sandbox_id short', (v) => (crishimOf(v).sandbox_id = 'abc')],
  ['sandbox_id upper case', (v) => (crishimOf(v).sandbox_id = 'A'.repeat(64))],
  ['uid missing', (v) => delete crishimOf(v).uid],
  ['attempt negative', (v) => (crishimOf(v).attempt = -1)],
  ['attempt a string', (v) => (crishimOf(v).attempt = '0')],
  ['created_at with a sign', (v) => (crishimOf(v).created_at = '-5')],
  ['created_at a number', (v) => (crishimOf(v).created_at = 5)],
  ['phase unknown', (v) => (crishimOf(v).phase = 'done')],
  ['phase creating', (v) => (crishimOf(v).phase = 'creating')],
  ['label value a number', (v) => (crishimOf(v).labels = { a: 1 })],
  ['annotations an array', (v) => (crishimOf(v).annotations = ['a'])],
  ['several problems at once', (v) => ((v.name = ''), (crishimOf(v).attempt = -2), delete v.checksum)],
  ['not an object', (v) => Object.keys(v).forEach((k) => delete v[k])],
];

describe('checkpoint schema checker', () => {
  it.each(variants)('%s: the same verdict as Ajv', (_, change) => {
    const v = clone();
    change(v);
    const errors = ours(v);
    expect({ valid: errors.length === 0 }).toEqual({ valid: ajv(v) });
    // as many findings as Ajv reports with allErrors
    expect(errors.length).toBe(ajv.errors?.length ?? 0);
  });

  it('gives Ajv a value that is not an object too', () => {
    for (const v of [null, [], 'v1', 7]) expect(ours(v).length === 0).toBe(ajv(v));
  });

  it('refuses a schema keyword it does not implement instead of ignoring it', () => {
    expect(() => compileSchemaCheck({ type: 'object', maxProperties: 3 })).toThrow(/maxProperties/);
    expect(() => compileSchemaCheck({ properties: { a: { oneOf: [] } } })).toThrow(/oneOf.*\/a/);
    expect(() => compileSchemaCheck({ additionalProperties: false })).toThrow(/must be a schema/);
  });
});
