import type * as grpc from '@grpc/grpc-js';
import type * as protobuf from 'protobufjs';
import { CONVERSION_OPTIONS, criProtoRoot } from './proto';

export type CriServiceName = 'RuntimeService' | 'ImageService';

/**
 * The grpc-js definition of a CRI service, made from the one parsed proto (criProtoRoot).
 * @grpc/proto-loader would build a second copy of the proto from JSON, plus descriptor
 * protos (and protobufjs' descriptor.proto reflection) that only gRPC reflection reads:
 * measured 2.4 MiB of heap and 7 MiB RSS for nothing the server uses. The serializers do
 * exactly what proto-loader's do (test/unit/service-definitions.test.ts compares them).
 */
export function criServiceDefinition(name: CriServiceName): grpc.ServiceDefinition {
  const service = criProtoRoot().lookupService(`runtime.v1.${name}`);
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methodsArray) {
    // resolveAll() ran in criProtoRoot: both types are there
    const req = method.resolvedRequestType as protobuf.Type;
    const res = method.resolvedResponseType as protobuf.Type;
    out[method.name] = {
      path: `/${service.fullName.slice(1)}/${method.name}`,
      requestStream: Boolean(method.requestStream),
      responseStream: Boolean(method.responseStream),
      requestSerialize: serializer(req),
      requestDeserialize: deserializer(req),
      responseSerialize: serializer(res),
      responseDeserialize: deserializer(res),
      originalName: method.name.charAt(0).toLowerCase() + method.name.slice(1),
    };
  }
  return out;
}

function serializer(type: protobuf.Type): (value: unknown) => Buffer {
  return (value) => {
    if (Array.isArray(value))
      throw new Error(`Failed to serialize message: expected object with ${type.name} structure, got array instead`);
    const bytes = type.encode(type.fromObject(value as Record<string, unknown>)).finish();
    // protobufjs' node writer already answers a Buffer
    return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer(type: protobuf.Type): (bytes: Buffer) => unknown {
  return (bytes) => type.toObject(type.decode(bytes), CONVERSION_OPTIONS);
}
