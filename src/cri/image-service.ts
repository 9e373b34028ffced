import { createHash } from 'crypto';
import { promises as fsp } from 'fs';
import type Docker from 'dockerode';
import { status as grpcStatus } from '@grpc/grpc-js';
import { normalizeRef, pullImage, type RegistryAuth } from '../docker/images';
import { CriError, dockerMessage, invalidArgument, isDockerNotFound, toCriError } from '../server/errors';
import type { CallContext, ImageImpl, ImageReq, ImageRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { sendChunks } from './stream-lists';
import { nowNanos } from './time';

type CriImage = NonNullable<ImageRes<'ImageStatus'>['image']>;
type AuthConfig = NonNullable<ImageReq<'PullImage'>['auth']>;

/** Registry host of a reference, as Docker resolves it (`docker.io` when none is named). */
export function registryHost(ref: string): string {
  const first = ref.split('/')[0];
  const hasHost = ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return hasHost ? first : 'docker.io';
}

/** CRI AuthConfig -> Docker's X-Registry-Auth; undefined when no credentials were given. */
export function dockerAuth(auth: AuthConfig | null | undefined, ref: string): RegistryAuth | undefined {
  if (!auth) return undefined;
  let { username, password } = auth;
  if (!username && auth.auth) {
    const decoded = Buffer.from(auth.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw invalidArgument('auth.auth must be base64 of "user:password"');
    username = decoded.slice(0, colon);
    password = decoded.slice(colon + 1);
  }
  if (!username && !auth.identity_token && !auth.registry_token) return undefined;
  const out: RegistryAuth = { serveraddress: auth.server_address || registryHost(ref) };
  if (username) out.username = username;
  if (password) out.password = password;
  if (auth.identity_token) out.identitytoken = auth.identity_token;
  if (auth.registry_token) out.registrytoken = auth.registry_token;
  return out;
}

/** A pull failure with the registry's own words and a code that says what to do about it. */
export function pullError(ref: string, err: unknown): CriError {
  if (err instanceof CriError && err.code === grpcStatus.CANCELLED) return err;
  const prefix = `pull image ${ref}: `;
  const msg = err instanceof CriError ? (err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message) : dockerMessage(err);
  const text = `pull image ${ref}: ${msg}`;
  if (/invalid reference format/i.test(msg)) return new CriError(grpcStatus.INVALID_ARGUMENT, text, { cause: err });
  if (/unauthorized|authentication required|no basic auth credentials|incorrect username or password/i.test(msg)) {
    return new CriError(grpcStatus.UNAUTHENTICATED, text, { cause: err });
  }
  if (/denied/i.test(msg)) return new CriError(grpcStatus.PERMISSION_DENIED, text, { cause: err });
  if (/manifest unknown|not found|does not exist/i.test(msg)) return new CriError(grpcStatus.NOT_FOUND, text, { cause: err });
  if (/connection refused|no such host|timeout|network is unreachable|EOF/i.test(msg)) return new CriError(grpcStatus.UNAVAILABLE, text, { cause: err });
  const base = toCriError(err, `pull image ${ref}`);
  return base.code === grpcStatus.UNKNOWN ? new CriError(grpcStatus.UNKNOWN, text, { cause: err }) : base;
}

/** uid or username from an image's USER (`1000`, `1000:1000`, `nobody`, `nobody:grp`). */
export function imageUser(user: string | undefined): { uid: { value: string } | null; username: string } {
  const name = (user ?? '').split(':')[0];
  if (!name) return { uid: null, username: '' };
  return /^\d+$/.test(name) ? { uid: { value: name }, username: '' } : { uid: null, username: name };
}

/** The CRI Image of Docker's inspect or list answer (list has no USER: ImageStatus does). */
function toCriImage(
  img: { Id: string; RepoTags?: string[]; RepoDigests?: string[]; Size: number; Config?: { User?: string } },
  pinnedRef: string,
): CriImage {
  const tags = (img.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
  return {
    id: img.Id,
    repo_tags: tags,
    repo_digests: (img.RepoDigests ?? []).filter((d) => !d.startsWith('<none>')),
    size: String(img.Size),
    ...imageUser(img.Config?.User),
    spec: { image: img.Id, annotations: {} },
    pinned: tags.includes(pinnedRef),
  };
}

async function inspectImage(deps: ServiceDeps, ref: string): Promise<Docker.ImageInspectInfo | undefined> {
  try {
    return await deps.docker.getImage(ref).inspect();
  } catch (err) {
    if (isDockerNotFound(err)) return undefined;
    throw toCriError(err, `inspect image ${ref}`);
  }
}

/** Docker's reference grammar (host[:port]/path[:tag][@digest]), or an image id. */
const NAME_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const REFERENCE = new RegExp(
  `^(?:[a-zA-Z0-9](?:[a-zA-Z0-9.-]*[a-zA-Z0-9])?(?::[0-9]+)?/)?${NAME_COMPONENT}(?:/${NAME_COMPONENT})*(?::[\\w][\\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$`,
);
const IMAGE_ID = /^(?:sha256:)?[0-9a-f]{6,64}$/;

export function isImageRef(ref: string): boolean {
  return ref.length <= 4096 && (IMAGE_ID.test(ref) || REFERENCE.test(ref));
}

function imageRefOf(req: { image: { image: string } | null }, field = 'image.image'): string {
  const ref = req.image?.image ?? '';
  if (!ref) throw invalidArgument(`${field} must be set`);
  if (!isImageRef(ref)) throw invalidArgument(`${field} ${JSON.stringify(ref.slice(0, 80))} is not an image reference`);
  return ref;
}

/** `docker df` walks layers: remember its answer for a while (the kubelet asks often). */
const DF_TTL_MS = 30_000;

export function imageHandlers(deps: ServiceDeps): ImageImpl {
  const pinnedRef = normalizeRef(deps.config.podInfraContainerImage);
  const inflight = new Map<string, Promise<void>>();
  let df: { at: number; value: Promise<{ images: number; containers: number }> } | undefined;

  const diskUsage = (): Promise<{ images: number; containers: number }> => {
    if (!df || Date.now() - df.at > DF_TTL_MS) {
      const value = (deps.docker.df() as Promise<{ LayersSize?: number; Containers?: Array<{ SizeRw?: number }> }>).then((d) => ({
        images: d.LayersSize ?? 0,
        containers: (d.Containers ?? []).reduce((sum, c) => sum + (c.SizeRw ?? 0), 0),
      }));
      df = { at: Date.now(), value };
      value.catch(() => (df = undefined));
    }
    return df.value;
  };

  const list = async (filter: ImageReq<'ListImages'>['filter']): Promise<CriImage[]> => {
    const ref = filter?.image?.image;
    if (ref) {
      if (!isImageRef(ref)) throw invalidArgument(`filter.image.image ${JSON.stringify(ref.slice(0, 80))} is not an image reference`);
      const info = await inspectImage(deps, ref);
      return info ? [toCriImage(info, pinnedRef)] : [];
    }
    return (await deps.docker.listImages()).map((i) => toCriImage(i, pinnedRef));
  };

  return {
    async PullImage(req: ImageReq<'PullImage'>, ctx: CallContext): Promise<ImageRes<'PullImage'>> {
      const ref = normalizeRef(imageRefOf(req));
      ctx.annotate({ image: ref });
      const auth = dockerAuth(req.auth, ref);
      // identical pulls (same image, same credentials) share one Docker pull
      const key = `${ref}\n${createHash('sha256').update(JSON.stringify(auth ?? {})).digest('hex')}`;
      let pull = inflight.get(key);
      if (pull) {
        ctx.log.debug('joining an in-flight pull', { image: ref });
      } else {
        pull = pullImage(deps.docker, ref, { auth, logger: ctx.log }).finally(() => inflight.delete(key));
        inflight.set(key, pull);
      }
      try {
        await pull;
      } catch (err) {
        throw pullError(ref, err);
      }
      const info = await inspectImage(deps, ref);
      if (!info) throw new CriError(grpcStatus.INTERNAL, `pull image ${ref}: pulled, but Docker does not have it`);
      ctx.log.info('image pulled', { image: ref, imageId: info.Id });
      return { image_ref: info.Id };
    },

    async ImageStatus(req: ImageReq<'ImageStatus'>, ctx: CallContext): Promise<ImageRes<'ImageStatus'>> {
      const ref = imageRefOf(req);
      const info = await inspectImage(deps, ref);
      // CRI: an absent image is an empty answer, not an error
      if (!info) return { image: null, info: {} };
      ctx.annotate({ image: ref });
      const out: ImageRes<'ImageStatus'> = { image: toCriImage(info, pinnedRef), info: {} };
      if (req.verbose) {
        out.info = {
          info: JSON.stringify({ created: info.Created, architecture: info.Architecture, os: info.Os, config: info.Config, rootFS: info.RootFS }),
        };
      }
      return out;
    },

    async ListImages(req: ImageReq<'ListImages'>): Promise<ImageRes<'ListImages'>> {
      return { images: await list(req.filter) };
    },

    async StreamImages(req: ImageReq<'StreamImages'>, _ctx: CallContext, send: (m: ImageRes<'StreamImages'>) => Promise<void>): Promise<void> {
      await sendChunks(await list(req.filter), (images) => ({ images }), send);
    },

    async RemoveImage(req: ImageReq<'RemoveImage'>, ctx: CallContext): Promise<ImageRes<'RemoveImage'>> {
      const ref = imageRefOf(req);
      const info = await inspectImage(deps, ref);
      if (!info) return {};
      ctx.annotate({ image: ref, imageId: info.Id });
      // by id: every tag goes with it; by tag: that tag (and the image if it was the last)
      const byId = info.Id === ref || info.Id === `sha256:${ref}` || (/^(sha256:)?[0-9a-f]{6,64}$/.test(ref) && info.Id.replace('sha256:', '').startsWith(ref.replace('sha256:', '')));
      try {
        await deps.docker.getImage(byId ? info.Id : ref).remove({ force: byId });
      } catch (err) {
        if (isDockerNotFound(err)) return {};
        throw toCriError(err, `remove image ${ref}`);
      }
      ctx.log.info('image removed', { image: ref });
      return {};
    },

    async ImageFsInfo(): Promise<ImageRes<'ImageFsInfo'>> {
      let engine = deps.engine.current();
      if (!engine.dockerRootDir) engine = await deps.engine.refresh();
      const mountpoint = engine.dockerRootDir ?? '/var/lib/docker';
      const [usage, st] = await Promise.all([diskUsage(), fsp.statfs(mountpoint).catch(() => undefined)]);
      // inodes are the data root filesystem's: Docker keeps no per-layer inode count
      const inodes = st ? String(st.files - st.ffree) : '0';
      const timestamp = nowNanos();
      return {
        image_filesystems: [{ timestamp, fs_id: { mountpoint }, used_bytes: { value: String(usage.images) }, inodes_used: { value: inodes } }],
        container_filesystems: [{ timestamp, fs_id: { mountpoint }, used_bytes: { value: String(usage.containers) }, inodes_used: { value: inodes } }],
      };
    },
  };
}
