import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as protobuf from 'protobufjs';
import { assetPath, readAsset } from '../assets';
import type { ProtoGrpcType } from '../generated/api';

/** Same options as `npm run gen` gives proto-loader-gen-types, so the generated types match what arrives. */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** The proto in the checkout (tests load it with protobufjs directly). */
export const PROTO_PATH = assetPath('proto/runtime/v1/api.proto');

let cached: ProtoGrpcType | undefined;
let parsedRoot: protobuf.Root | undefined;

/**
 * The CRI proto as protobufjs reflection, field names as the loader delivers them (keepCase).
 * Parsed from text, not loaded by file name, so the single executable can hand over its
 * embedded copy; api.proto imports nothing, and keepCase is the one option that acts at parse time.
 */
export function criProtoRoot(): protobuf.Root {
  if (!parsedRoot) {
    parsedRoot = protobuf.parse(readAsset('proto/runtime/v1/api.proto'), { keepCase: true }).root;
    parsedRoot.resolveAll();
  }
  return parsedRoot;
}

export function loadCriProto(): ProtoGrpcType {
  if (!cached) {
    const def = protoLoader.fromJSON(criProtoRoot().toJSON(), LOADER_OPTIONS);
    cached = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  }
  return cached;
}

/** The kubelet's limit for CRI messages (16 MiB): large ListContainers answers must fit. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
