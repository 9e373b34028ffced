import type * as Docker from '../docker/types';
import type { CallContext, ImageReq, ImageRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { inspectImage, requireImageRef, toCriImage, type DockerImageLike } from '../images/image-common';

/** What `verbose` adds: the parts of `docker inspect` a human debugging a pod wants. */
export function verboseImageInfo(info: Docker.ImageInspectInfo): Record<string, string> {
  return {
    info: JSON.stringify({
      id: info.Id,
      created: info.Created,
      architecture: info.Architecture,
      os: info.Os,
      size: info.Size,
      parent: info.Parent || undefined,
      config: info.Config,
      rootFS: info.RootFS,
      graphDriver: info.GraphDriver?.Name,
    }),
  };
}

/** ImageStatus by id, id prefix, tag or digest reference; an absent image is an empty answer. */
export function imageStatusRpc(deps: ServiceDeps, isPinned: (img: DockerImageLike) => boolean) {
  return async (req: ImageReq<'ImageStatus'>, ctx: CallContext): Promise<ImageRes<'ImageStatus'>> => {
    const ref = requireImageRef(req.image);
    ctx.annotate({ image: ref });
    const info = await inspectImage(deps, ref);
    // CRI: not found is `image: null`, not an error (the kubelet pulls on that answer)
    if (!info) {
      ctx.log.debug('image not present', { image: ref });
      return { image: null, info: {} };
    }
    return { image: toCriImage(info, isPinned), info: req.verbose ? verboseImageInfo(info) : {} };
  };
}
