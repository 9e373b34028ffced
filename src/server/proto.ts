import * as protobuf from 'protobufjs';
import { assetPath, readAsset } from '../assets';

/**
 * How messages turn into the plain objects handlers see, as @grpc/proto-loader (and so
 * proto-loader-gen-types, `npm run gen`) delivers them: int64 as strings, enums as names,
 * defaults filled in, oneof members named. keepCase acts at parse time (criProtoRoot).
 */
export const CONVERSION_OPTIONS: protobuf.IConversionOptions = {
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** The proto in the checkout (tests load it with protobufjs directly). */
export const PROTO_PATH = assetPath('proto/runtime/v1/api.proto');

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

/** The kubelet's limit for CRI messages (16 MiB): large ListContainers answers must fit. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
