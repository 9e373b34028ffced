import { invalidArgument } from '../errors';
import type { CallContext, ImageReq, ImageRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { inspectImage, toCriImage, type CriImage, type DockerImageLike } from '../images/image-common';
import { isImageRef } from '../docker/images';
import { sendChunks } from './stream-containers';

type Filter = ImageReq<'ListImages'>['filter'];

/**
 * One Docker call either way: a filter names one image (resolved like ImageStatus: id,
 * prefix, tag or digest), else `docker images`. List answers carry no USER, so uid/username
 * are only in ImageStatus (as in cri-dockerd: an inspect per image would cost N calls).
 */
export async function listCriImages(deps: ServiceDeps, filter: Filter, isPinned: (img: DockerImageLike) => boolean): Promise<CriImage[]> {
  const ref = filter?.image?.image;
  if (ref) {
    if (!isImageRef(ref)) throw invalidArgument(`filter.image.image ${JSON.stringify(ref.slice(0, 80))} is not an image reference`);
    const info = await inspectImage(deps, ref);
    return info ? [toCriImage(info, isPinned)] : [];
  }
  return (await deps.docker.listImages()).map((i) => toCriImage(i, isPinned));
}

export function listImagesRpc(deps: ServiceDeps, isPinned: (img: DockerImageLike) => boolean) {
  return async (req: ImageReq<'ListImages'>, ctx: CallContext): Promise<ImageRes<'ListImages'>> => {
    const images = await listCriImages(deps, req.filter, isPinned);
    ctx.log.debug('listed images', { image: req.filter?.image?.image || undefined, count: images.length });
    return { images };
  };
}

/** Server-streaming twin of ListImages: same filter and content, in chunks of STREAM_CHUNK. */
export function streamImagesRpc(deps: ServiceDeps, isPinned: (img: DockerImageLike) => boolean) {
  return async (req: ImageReq<'StreamImages'>, _ctx: CallContext, send: (m: ImageRes<'StreamImages'>) => Promise<void>): Promise<void> =>
    sendChunks(await listCriImages(deps, req.filter, isPinned), (images) => ({ images }), send);
}
