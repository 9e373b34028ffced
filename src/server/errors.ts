import { status } from '@grpc/grpc-js';
import type { ErrorKind } from '../errors';

/** The one place a domain error kind becomes a gRPC status code (what CRI clients see). */
const GRPC_STATUS: Record<ErrorKind, status> = {
  'not-found': status.NOT_FOUND,
  'invalid-argument': status.INVALID_ARGUMENT,
  'already-exists': status.ALREADY_EXISTS,
  'failed-precondition': status.FAILED_PRECONDITION,
  unavailable: status.UNAVAILABLE,
  'deadline-exceeded': status.DEADLINE_EXCEEDED,
  cancelled: status.CANCELLED,
  'resource-exhausted': status.RESOURCE_EXHAUSTED,
  'permission-denied': status.PERMISSION_DENIED,
  unauthenticated: status.UNAUTHENTICATED,
  unimplemented: status.UNIMPLEMENTED,
  internal: status.INTERNAL,
  unknown: status.UNKNOWN,
};

export function grpcStatusOf(kind: ErrorKind): status {
  return GRPC_STATUS[kind];
}
