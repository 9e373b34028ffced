import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../../src/generated/api';
import { criProtoRoot } from '../../src/server/proto';

/**
 * The CRI proto through @grpc/proto-loader, as clients (tests, the bench, crictl's own
 * stack) see it: generated client classes and service definitions. The daemon itself does
 * not load proto-loader (src/server/service-definitions.ts).
 */
let cached: ProtoGrpcType | undefined;

/** `npm run gen`'s options, written out here: the reference the daemon's own conversion is tested against. */
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

export function loadCriProto(): ProtoGrpcType {
  if (!cached) {
    const def = protoLoader.fromJSON(criProtoRoot().toJSON(), LOADER_OPTIONS);
    cached = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  }
  return cached;
}
