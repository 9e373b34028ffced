import type { DockerEngine } from './engine';
import type * as Docker from './types';
import type { Logger } from '../logging/logger';
import { DomainError, isNotFound, type ErrorKind } from '../errors';
import { fromDockerError, isDockerUnreachable } from './errors';

// ---------------------------------------------------------------------------
// References: Docker's grammar (distribution/reference), enough to validate,
// normalize and compare names without asking the daemon.
// ---------------------------------------------------------------------------

const DOMAIN =
  '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\\[[0-9a-fA-F:]+\\])(?::[0-9]+)?';
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(`^(?:(${DOMAIN})/)?(${COMPONENT}(?:/${COMPONENT})*)(?::(${TAG}))?(?:@(${DIGEST}))?$`);
/** A full or short image id, as `docker inspect` accepts it. */
const IMAGE_ID = /^(?:sha256:)?[0-9a-f]{6,64}$/;
const MAX_REF_LENGTH = 4096;

export interface ParsedRef {
  /** Registry host, `docker.io` when the reference names none. */
  domain: string;
  /** Repository path inside the registry (`library/busybox` on Docker Hub). */
  path: string;
  tag?: string;
  digest?: string;
}

/**
 * Parses a reference as Docker does: the first component is a registry host only when it
 * has a `.` or `:`, is `localhost`, or has upper case; otherwise the image is on Docker Hub.
 * Undefined when it is not a reference.
 */
export function parseRef(ref: string): ParsedRef | undefined {
  if (ref.length > MAX_REF_LENGTH) return undefined;
  const slash = ref.indexOf('/');
  const first = slash < 0 ? '' : ref.slice(0, slash);
  const hasDomain = slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first);
  const m = REFERENCE.exec(hasDomain ? ref : `docker.io/${ref}`);
  if (!m || !m[1]) return undefined;
  let domain = m[1];
  let path = m[2];
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  return { domain, path, tag: m[3], digest: m[4] };
}

/** True for anything `docker inspect` could resolve: a reference or an image id (prefix). */
export function isImageRef(ref: string): boolean {
  return ref.length > 0 && ref.length <= MAX_REF_LENGTH && (IMAGE_ID.test(ref) || parseRef(ref) !== undefined);
}

/** True when `ref` looks like an image id or id prefix rather than a name. */
export function isImageIdLike(ref: string): boolean {
  return IMAGE_ID.test(ref);
}

/** Adds `:latest` when a reference has neither tag nor digest, as `docker pull` does. */
export function normalizeRef(ref: string): string {
  if (ref.includes('@')) return ref;
  const lastSlash = ref.lastIndexOf('/');
  return ref.slice(lastSlash + 1).includes(':') ? ref : `${ref}:latest`;
}

function suffix(p: ParsedRef): string {
  return `${p.tag ? `:${p.tag}` : p.digest ? '' : ':latest'}${p.digest ? `@${p.digest}` : ''}`;
}

/** Fully qualified form (`docker.io/library/busybox:latest`): equal images names compare equal. */
export function canonicalRef(ref: string): string {
  const p = parseRef(ref);
  return p ? `${p.domain}/${p.path}${suffix(p)}` : ref;
}

/** The short form Docker uses in RepoTags/RepoDigests (`busybox:latest`, `user/app:1`). */
export function familiarRef(ref: string): string {
  const p = parseRef(ref);
  if (!p) return ref;
  if (p.domain !== 'docker.io') return `${p.domain}/${p.path}${suffix(p)}`;
  const path =
    p.path.startsWith('library/') && p.path.split('/').length === 2 ? p.path.slice('library/'.length) : p.path;
  return `${path}${suffix(p)}`;
}

/** Registry host of a reference, as Docker resolves it (`docker.io` when none is named). */
export function registryHost(ref: string): string {
  return parseRef(ref)?.domain ?? 'docker.io';
}

// ---------------------------------------------------------------------------
// Pull errors
// ---------------------------------------------------------------------------

/**
 * The registry's/daemon's own words. docker-modem wraps HTTP errors of streaming calls as
 * `(HTTP code 500) server error - <message> `; the message is what the user needs.
 */
export function registryMessage(err: unknown): string {
  if (err instanceof DomainError) return err.message;
  const e = err as { json?: { message?: unknown } | null; message?: unknown } | null;
  if (e?.json && typeof e.json.message === 'string') return e.json.message;
  const msg = typeof e?.message === 'string' ? e.message : String(err);
  return msg.replace(/^\(HTTP code \d+\) [^-]*- /, '').trim();
}

/**
 * A pull failure as a DomainError with the registry's message and a kind that says what to do:
 * UNAUTHENTICATED (credentials missing/wrong), PERMISSION_DENIED, NOT_FOUND (no such
 * manifest), UNAVAILABLE (registry or daemon unreachable), INVALID_ARGUMENT (bad reference).
 */
export function pullError(ref: string, err: unknown): DomainError {
  if (err instanceof DomainError && err.kind === 'cancelled') return err;
  if ((err as { name?: string } | null)?.name === 'AbortError')
    return new DomainError('cancelled', `pull image ${ref}: cancelled`, { cause: err });
  if (isDockerUnreachable(err)) return fromDockerError(err, `pull image ${ref}`);
  const prefix = `pull image ${ref}: `;
  let msg = registryMessage(err);
  if (msg.startsWith(prefix)) msg = msg.slice(prefix.length);
  const text = `${prefix}${msg}`;
  const kind = pullErrorKind(msg, (err as { statusCode?: number } | null)?.statusCode);
  return new DomainError(kind, text, { cause: err });
}

/** Order matters: "pull access denied ... may require 'docker login'" is an auth problem, not a 403. */
export function pullErrorKind(msg: string, httpStatus?: number): ErrorKind {
  if (/invalid reference format|repository name must|invalid tag format|invalid digest/i.test(msg))
    return 'invalid-argument';
  if (
    /unauthorized|authentication required|no basic auth credentials|incorrect username or password|docker login|authentication failed/i.test(
      msg,
    )
  ) {
    return 'unauthenticated';
  }
  if (/denied|forbidden/i.test(msg)) return 'permission-denied';
  if (/manifest unknown|not found|does not exist|no such (image|manifest)|name unknown/i.test(msg)) return 'not-found';
  if (
    /connection refused|no such host|i\/o timeout|timeout exceeded|network is unreachable|no route to host|EOF|connection reset|TLS handshake/i.test(
      msg,
    )
  ) {
    return 'unavailable';
  }
  switch (httpStatus) {
    case 400:
      return 'invalid-argument';
    case 401:
      return 'unauthenticated';
    case 403:
      return 'permission-denied';
    case 404:
      return 'not-found';
    default:
      return 'unknown';
  }
}

// ---------------------------------------------------------------------------
// Pull
// ---------------------------------------------------------------------------

/**
 * Pulls an image and waits for the pull to finish. Registry errors keep the registry's
 * message (including errors Docker reports inside the progress stream); `signal` aborts
 * the pull. Throws DomainError.
 */
export async function pullImage(
  docker: Pick<DockerEngine, 'pullImage'>,
  ref: string,
  opts: { auth?: Docker.RegistryAuth; signal?: AbortSignal; logger: Logger },
): Promise<void> {
  const image = normalizeRef(ref);
  const { logger } = opts;
  logger.info('pulling image', { image, registry: registryHost(image), withAuth: Boolean(opts.auth) });
  const started = Date.now();
  let lastStatus: string | undefined;
  await docker.pullImage(image, { auth: opts.auth, signal: opts.signal }, (evt) => {
    if (evt.status && !evt.id && !evt.error) lastStatus = evt.status;
  });
  logger.info('image pull finished', { image, status: lastStatus, durationMs: Date.now() - started });
}

/** Makes sure an image is present, pulling it when absent. */
export async function ensureImage(
  docker: Pick<DockerEngine, 'inspectImage' | 'pullImage'>,
  ref: string,
  opts: { signal?: AbortSignal; logger: Logger },
): Promise<void> {
  try {
    await docker.inspectImage(ref);
    return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  await pullImage(docker, ref, opts);
}
