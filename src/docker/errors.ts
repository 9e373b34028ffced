import { DomainError, type ErrorKind } from '../errors';

/**
 * A failure Docker reported (or Docker being unreachable), as a domain error. `detail` is
 * Docker's side of it; the message puts the operation in front, and a caller that knows
 * more context (the RPC and object) can re-describe it with `within`.
 */
export class DockerError extends DomainError {
  constructor(
    kind: ErrorKind,
    readonly detail: string,
    what?: string,
    cause?: unknown,
  ) {
    super(kind, what ? `${what}: ${detail}` : detail, { cause });
    this.name = 'DockerError';
  }

  /** The same failure, described as a step of `what` instead. */
  within(what: string): DockerError {
    return new DockerError(this.kind, this.detail, what, this.cause);
  }
}

/** dockerd itself did not answer (socket missing, connection refused or reset): not a registry or a request problem. */
export class DockerUnreachableError extends DockerError {
  constructor(detail: string, what?: string, cause?: unknown) {
    super('unavailable', detail, what, cause);
    this.name = 'DockerUnreachableError';
  }

  within(what: string): DockerUnreachableError {
    return new DockerUnreachableError(this.detail, what, this.cause);
  }
}

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
  if (err instanceof DockerUnreachableError) return true;
  const code = (err as DockerErrorShape | null)?.code;
  return (
    code === 'ECONNREFUSED' ||
    code === 'ENOENT' ||
    code === 'EPIPE' ||
    code === 'ECONNRESET' ||
    code === 'EACCES' ||
    code === 'ETIMEDOUT'
  );
}

/** Docker's own message (from its JSON body) rather than docker-modem's "(HTTP code 500) ..." wrapper. */
export function dockerMessage(err: unknown): string {
  const e = err as DockerErrorShape | null;
  if (e?.json && typeof e.json === 'object' && typeof e.json.message === 'string') return e.json.message;
  if (e?.message) return e.message;
  return String(err);
}

/**
 * Maps any error (typically one dockerode rejected with) to a DomainError: ours pass through,
 * Docker ones get the kind that tells the kubelet what to do next.
 * `what` names the operation and object, e.g. `start container 3f2a...`.
 */
export function fromDockerError(err: unknown, what?: string): DomainError {
  // the engine's errors name their operation; a caller's `what` says more (which RPC, which pod)
  if (err instanceof DockerError) return what ? err.within(what) : err;
  if (err instanceof DomainError) return err;
  const e = err as DockerErrorShape | null;
  if (isDockerUnreachable(err)) {
    return new DockerUnreachableError(
      `docker daemon unreachable (${e?.code ?? 'error'}): ${dockerMessage(err)}`,
      what,
      err,
    );
  }
  if ((err as { name?: string } | null)?.name === 'AbortError') {
    // a deadline (withDeadline), not a caller giving up: dockerd took the request and sat on it
    if ((err as { cause?: { name?: string } }).cause?.name === 'TimeoutError')
      return new DockerUnreachableError('docker daemon did not answer in time: it may be hung', what, err);
    return new DockerError('cancelled', 'cancelled', what, err);
  }
  const keep = (kind: ErrorKind, text = dockerMessage(err)): DomainError => new DockerError(kind, text, what, err);
  switch (e?.statusCode) {
    case 400:
      return keep('invalid-argument');
    case 413:
    case 414:
    case 431:
      // the request itself is too large for dockerd (or a proxy): the config must shrink
      return keep('invalid-argument', `request too large for docker (HTTP ${e.statusCode}): ${dockerMessage(err)}`);
    case 404:
      return keep('not-found');
    case 409:
      return keep('failed-precondition');
    case 401:
    case 403:
      return keep('permission-denied');
    default:
      return keep('unknown');
  }
}
