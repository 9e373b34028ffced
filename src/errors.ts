/**
 * Domain errors: what went wrong, in words every layer understands. Handlers and the Docker
 * layer throw these; only the server layer (src/server/errors.ts) turns a kind into a gRPC
 * status code, so nothing below it depends on the transport.
 */
export type ErrorKind =
  | 'not-found'
  | 'invalid-argument'
  | 'already-exists'
  | 'failed-precondition'
  | 'unavailable'
  | 'deadline-exceeded'
  | 'cancelled'
  | 'resource-exhausted'
  | 'permission-denied'
  | 'unauthenticated'
  | 'unimplemented'
  | 'internal'
  | 'unknown';

/** An error with the kind that tells the client what to do next (retry, fix the request, give up). */
export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DomainError';
  }
}

export const notFound = (what: string): DomainError => new DomainError('not-found', `${what} not found`);
export const invalidArgument = (msg: string): DomainError => new DomainError('invalid-argument', msg);
export const alreadyExists = (msg: string): DomainError => new DomainError('already-exists', msg);
export const failedPrecondition = (msg: string): DomainError => new DomainError('failed-precondition', msg);
export const unimplemented = (msg: string): DomainError => new DomainError('unimplemented', msg);
export const internal = (msg: string, cause?: unknown): DomainError => new DomainError('internal', msg, { cause });
export const unavailable = (msg: string, cause?: unknown): DomainError =>
  new DomainError('unavailable', msg, { cause });
export const deadlineExceeded = (msg: string): DomainError => new DomainError('deadline-exceeded', msg);
export const cancelled = (msg: string, cause?: unknown): DomainError => new DomainError('cancelled', msg, { cause });
export const resourceExhausted = (msg: string): DomainError => new DomainError('resource-exhausted', msg);

/** True for a `not-found` domain error (e.g. the Docker engine saying the object does not exist). */
export const isNotFound = (err: unknown): boolean => err instanceof DomainError && err.kind === 'not-found';
