import type { CallContext, ImageReq, ImageRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { DockerImageLike } from '../images/image-common';
import { listCriImages } from '../images/list';

export function listImagesRpc(deps: ServiceDeps, isPinned: (img: DockerImageLike) => boolean) {
  return async (req: ImageReq<'ListImages'>, ctx: CallContext): Promise<ImageRes<'ListImages'>> => {
    const images = await listCriImages(deps, req.filter, isPinned);
    ctx.log.debug('listed images', { image: req.filter?.image?.image || undefined, count: images.length });
    return { images };
  };
}
