import type { CallContext, ImageReq, ImageRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { DockerImageLike } from '../images/image-common';
import { listCriImages } from '../images/list';
import { sendChunks } from '../server/stream-chunks';

/** Server-streaming twin of ListImages: same filter and content, in chunks of STREAM_CHUNK. */
export function streamImagesRpc(deps: ServiceDeps, isPinned: (img: DockerImageLike) => boolean) {
  return async (
    req: ImageReq<'StreamImages'>,
    _ctx: CallContext,
    send: (m: ImageRes<'StreamImages'>) => Promise<void>,
  ): Promise<void> => sendChunks(await listCriImages(deps, req.filter, isPinned), (images) => ({ images }), send);
}
