/**
 * A checker for the JSON Schema keywords the checkpoint schema uses (checkpoints/*.schema.json
 * stays the one definition of a valid file). Ajv did this job by compiling the schema to code at
 * start-up: ~60 modules and, measured on an idle daemon, about 2 MiB of RSS and 1.2 MiB of heap to
 * check a few small files, at start and on a rare read. A schema using any other keyword is
 * refused when the checker is built, so a schema change cannot be silently half-applied;
 * test/unit/checkpoint-schema.test.ts holds it to Ajv's verdicts.
 */
export type SchemaCheck = (value: unknown) => string[];

type Schema = Record<string, unknown>;

/** Keywords that only document. */
const ANNOTATIONS = new Set(['$schema', '$id', 'title', 'description']);
const KEYWORDS = new Set([
  'type',
  'const',
  'enum',
  'minLength',
  'pattern',
  'minimum',
  'required',
  'properties',
  'items',
  'additionalProperties',
]);

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function hasType(v: unknown, t: string): boolean {
  if (t === 'integer') return typeof v === 'number' && Number.isInteger(v);
  return typeOf(v) === t;
}

/** Throws on a keyword this checker does not implement, anywhere in the schema. */
function assertSupported(schema: Schema, at: string): void {
  for (const [k, v] of Object.entries(schema)) {
    if (ANNOTATIONS.has(k)) continue;
    if (!KEYWORDS.has(k))
      throw new Error(`checkpoint schema: keyword ${JSON.stringify(k)} at ${at || '/'} is not supported`);
    if (k === 'properties')
      for (const [p, s] of Object.entries(v as Schema)) assertSupported(s as Schema, `${at}/${p}`);
    if (k === 'items' || k === 'additionalProperties') {
      // the boolean forms (additionalProperties: false) mean something this checker does not do
      if (typeof v !== 'object' || v === null)
        throw new Error(`checkpoint schema: ${k} at ${at || '/'} must be a schema`);
      assertSupported(v as Schema, `${at}/*`);
    }
  }
}

function check(schema: Schema, v: unknown, at: string, errors: string[]): void {
  const where = at || '/';
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    if (!types.some((t) => hasType(v, t))) {
      errors.push(`${where} must be ${types.join(',')}`);
      return;
    }
  }
  if ('const' in schema && v !== schema.const) errors.push(`${where} must be equal to constant`);
  if (Array.isArray(schema.enum) && !schema.enum.includes(v)) errors.push(`${where} must be one of the allowed values`);
  if (typeof v === 'string') {
    if (typeof schema.minLength === 'number' && [...v].length < schema.minLength)
      errors.push(`${where} must not have fewer than ${schema.minLength} characters`);
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(v))
      errors.push(`${where} must match pattern "${schema.pattern}"`);
  }
  if (typeof v === 'number' && typeof schema.minimum === 'number' && v < schema.minimum)
    errors.push(`${where} must be >= ${schema.minimum}`);
  if (Array.isArray(v) && typeof schema.items === 'object')
    v.forEach((item, i) => check(schema.items as Schema, item, `${at}/${i}`, errors));
  if (typeOf(v) !== 'object') return;
  const obj = v as Record<string, unknown>;
  for (const r of (schema.required as string[] | undefined) ?? [])
    if (!Object.hasOwn(obj, r)) errors.push(`${where} must have required property '${r}'`);
  const props = (schema.properties as Record<string, Schema> | undefined) ?? {};
  for (const [k, item] of Object.entries(obj)) {
    if (Object.hasOwn(props, k)) check(props[k], item, `${at}/${k}`, errors);
    else if (typeof schema.additionalProperties === 'object')
      check(schema.additionalProperties as Schema, item, `${at}/${k}`, errors);
  }
}

/** A checker for `schema`: every violation (path and reason), none for a valid value. */
export function compileSchemaCheck(schema: Schema): SchemaCheck {
  assertSupported(schema, '');
  return (value) => {
    const errors: string[] = [];
    check(schema, value, '', errors);
    return errors;
  };
}
