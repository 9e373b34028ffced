import * as protobuf from 'protobufjs';
import { criProtoRoot } from '../server/proto';
import { invalidArgument } from '../errors';

/**
 * The loader delivers enums as their names (`enums: String`), but a number the proto does
 * not define arrives as that number, and code that expects a name then throws a TypeError
 * (port protocol 7: "p.protocol.toLowerCase is not a function") in the middle of a
 * handler. Walking the request against the proto's own description refuses every such
 * field, wherever it is, before a handler acts on it.
 */

/** The same parse of the proto the gRPC server loaded (embedded in the single executable, so no file is opened). */
function lookup(typeName: string): protobuf.Type {
  return criProtoRoot().lookupType(typeName);
}

function checkValue(field: protobuf.Field, value: unknown, where: string): void {
  if (value === null || value === undefined) return;
  const t = field.resolvedType;
  if (t instanceof protobuf.Enum) {
    if (typeof value !== 'string' || !(value in t.values)) {
      const names = Object.keys(t.values);
      const shown = names.length > 8 ? `${names.slice(0, 8).join(', ')}, ...` : names.join(', ');
      throw invalidArgument(`${where} ${JSON.stringify(value)} is not a valid ${t.name} (one of ${shown})`);
    }
  } else if (t instanceof protobuf.Type && typeof value === 'object') {
    checkMessage(t, value as Record<string, unknown>, where);
  }
}

function checkMessage(type: protobuf.Type, msg: Record<string, unknown>, where: string): void {
  for (const field of type.fieldsArray) {
    const v = msg[field.name];
    if (v === null || v === undefined || !field.resolvedType) continue;
    const at = where ? `${where}.${field.name}` : field.name;
    if (field instanceof protobuf.MapField) {
      for (const [k, item] of Object.entries(v as Record<string, unknown>))
        checkValue(field, item, `${at}[${JSON.stringify(k)}]`);
    } else if (field.repeated && Array.isArray(v)) {
      v.forEach((item, i) => checkValue(field, item, `${at}[${i}]`));
    } else {
      checkValue(field, v, at);
    }
  }
}

/** Refuses enum fields outside the proto's values anywhere in a request (`runtime.v1.<Message>`). */
export function checkEnums(message: string, req: unknown): void {
  if (typeof req === 'object' && req !== null)
    checkMessage(lookup(`runtime.v1.${message}`), req as Record<string, unknown>, '');
}
