import { status } from '@grpc/grpc-js';

/** An error that carries the gRPC status code it must be answered with. */
export class CriError extends Error {
  constructor(
    readonly code: status,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CriError';
  }
}

export const notFound = (what: string): CriError => new CriError(status.NOT_FOUND, `${what} not found`);
export const invalidArgument = (msg: string): CriError => new CriError(status.INVALID_ARGUMENT, msg);
export const failedPrecondition = (msg: string): CriError => new CriError(status.FAILED_PRECONDITION, msg);
export const unimplemented = (msg: string): CriError => new CriError(status.UNIMPLEMENTED, msg);
export const internal = (msg: string, cause?: unknown): CriError => new CriError(status.INTERNAL, msg, { cause });
export const unavailable = (msg: string, cause?: unknown): CriError => new CriError(status.UNAVAILABLE, msg, { cause });
export const deadlineExceeded = (msg: string): CriError => new CriError(status.DEADLINE_EXCEEDED, msg);

/** Fields dockerode (docker-modem) puts on the errors it rejects with. */
interface DockerErrorShape {
  statusCode?: number;
  code?: string;
  json?: { message?: string } | null;
  reason?: string;
  message?: string;
  name?: string;
}

/** True when the error is Docker saying the object does not exist. */
export function isDockerNotFound(err: unknown): boolean {
  return (err as DockerErrorShape | null)?.statusCode === 404;
}

/** True when the Docker daemon could not be reached at all. */
export function isDockerUnreachable(err: unknown): boolean {
  const code = (err as DockerErrorShape | null)?.code;
  return code === 'ECONNREFUSED' || code === 'ENOENT' || code === 'EPIPE' || code === 'ECONNRESET' || code === 'EACCES' || code === 'ETIMEDOUT';
}

/** Docker's own message (from its JSON body) rather than docker-modem's "(HTTP code 500) ..." wrapper. */
export function dockerMessage(err: unknown): string {
  const e = err as DockerErrorShape | null;
  if (e?.json && typeof e.json === 'object' && typeof e.json.message === 'string') return e.json.message;
  if (e?.message) return e.message;
  return String(err);
}

/**
 * Maps any error thrown by a handler to a CriError: our own pass through,
 * Docker ones get the code that tells the kubelet what to do next.
 * `what` names the operation and object, e.g. `start container 3f2a...`.
 */
export function toCriError(err: unknown, what?: string): CriError {
  if (err instanceof CriError) return err;
  const prefix = what ? `${what}: ` : '';
  const e = err as DockerErrorShape | null;
  if (isDockerUnreachable(err)) {
    return unavailable(`${prefix}docker daemon unreachable (${e?.code ?? 'error'}): ${dockerMessage(err)}`, err);
  }
  if ((err as { name?: string } | null)?.name === 'AbortError') {
    return new CriError(status.CANCELLED, `${prefix}cancelled`, { cause: err });
  }
  switch (e?.statusCode) {
    case 400:
      return new CriError(status.INVALID_ARGUMENT, `${prefix}${dockerMessage(err)}`, { cause: err });
    case 413:
    case 414:
    case 431:
      // the request itself is too large for dockerd (or a proxy): the config must shrink
      return new CriError(status.INVALID_ARGUMENT, `${prefix}request too large for docker (HTTP ${e.statusCode}): ${dockerMessage(err)}`, { cause: err });
    case 404:
      return new CriError(status.NOT_FOUND, `${prefix}${dockerMessage(err)}`, { cause: err });
    case 409:
      return new CriError(status.FAILED_PRECONDITION, `${prefix}${dockerMessage(err)}`, { cause: err });
    case 401:
    case 403:
      return new CriError(status.PERMISSION_DENIED, `${prefix}${dockerMessage(err)}`, { cause: err });
    default:
      break;
  }
  return new CriError(status.UNKNOWN, `${prefix}${dockerMessage(err)}`, { cause: err });
}
