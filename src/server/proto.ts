import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../generated/api';

/** Same options as `npm run gen` gives proto-loader-gen-types, so the generated types match what arrives. */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** proto/ sits two levels above this file both in src/ (ts-jest) and in dist/ (built). */
export const PROTO_PATH = path.resolve(__dirname, '..', '..', 'proto', 'runtime', 'v1', 'api.proto');

let cached: ProtoGrpcType | undefined;

export function loadCriProto(): ProtoGrpcType {
  if (!cached) {
    const def = protoLoader.loadSync(PROTO_PATH, LOADER_OPTIONS);
    cached = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  }
  return cached;
}

/** The kubelet's limit for CRI messages (16 MiB): large ListContainers answers must fit. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
