import { invalidArgument } from '../errors';
import type { ImageReq } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { inspectImage, toCriImage, type CriImage, type DockerImageLike } from './image-common';
import { isImageRef } from '../docker/images';

type Filter = ImageReq<'ListImages'>['filter'];

/**
 * One Docker call either way: a filter names one image (resolved like ImageStatus: id,
 * prefix, tag or digest), else `docker images`. List answers carry no USER, so uid/username
 * are only in ImageStatus (as in cri-dockerd: an inspect per image would cost N calls).
 */
export async function listCriImages(
  deps: ServiceDeps,
  filter: Filter,
  isPinned: (img: DockerImageLike) => boolean,
): Promise<CriImage[]> {
  const ref = filter?.image?.image;
  if (ref) {
    if (!isImageRef(ref))
      throw invalidArgument(`filter.image.image ${JSON.stringify(ref.slice(0, 80))} is not an image reference`);
    const info = await inspectImage(deps, ref);
    return info ? [toCriImage(info, isPinned)] : [];
  }
  return (await deps.docker.listImages()).map((i) => toCriImage(i, isPinned));
}
