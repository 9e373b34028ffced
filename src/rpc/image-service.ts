import type { ImageImpl } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { pinnedMatcher } from '../images/image-common';
import { imageFsInfoRpc } from './image-fs-info';
import { listImagesRpc } from './list-images';
import { streamImagesRpc } from './stream-images';
import { pullImageRpc } from './pull-image';
import { createPullCoalescer, dockerPuller, type PullCoalescer } from '../images/pull';
import { removeImageRpc } from './remove-image';
import { imageStatusRpc } from './image-status';

/** The CRI ImageService over Docker, one module per RPC (group). */
export function imageHandlers(deps: ServiceDeps, opts: { coalescer?: PullCoalescer } = {}): ImageImpl {
  const isPinned = pinnedMatcher(deps.config.podInfraContainerImage);
  const coalescer = opts.coalescer ?? createPullCoalescer(dockerPuller(deps));
  return {
    PullImage: pullImageRpc(deps, coalescer),
    ImageStatus: imageStatusRpc(deps, isPinned),
    ListImages: listImagesRpc(deps, isPinned),
    StreamImages: streamImagesRpc(deps, isPinned),
    RemoveImage: removeImageRpc(deps),
    ImageFsInfo: imageFsInfoRpc(deps),
  };
}
