import { isImageIdLike } from '../docker/images';
import { isNotFound } from '../errors';
import type { CallContext, ImageReq, ImageRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { inspectImage, requireImageRef } from '../images/image-common';

/** True when `ref` named the image by its id (full, `sha256:`-prefixed or a prefix of it). */
export function refersToId(ref: string, imageId: string): boolean {
  if (!isImageIdLike(ref)) return false;
  return imageId.replace(/^sha256:/, '').startsWith(ref.replace(/^sha256:/, ''));
}

/**
 * RemoveImage, idempotent (absent = OK). By id: the image with every tag (`docker rmi -f <id>`,
 * which still refuses while a running container uses it). By tag or digest: that reference,
 * and the image when it was the last one (Docker drops the then tagless digest references too).
 */
export function removeImageRpc(deps: ServiceDeps) {
  return async (req: ImageReq<'RemoveImage'>, ctx: CallContext): Promise<ImageRes<'RemoveImage'>> => {
    const ref = requireImageRef(req.image);
    ctx.annotate({ image: ref });
    const info = await inspectImage(deps, ref);
    if (!info) {
      ctx.log.debug('image already absent', { image: ref });
      return {};
    }
    const byId = refersToId(ref, info.Id);
    try {
      const removed = await deps.docker.removeImage(byId ? info.Id : ref, { force: byId });
      ctx.log.info('image removed', {
        image: ref,
        imageId: info.Id,
        byId,
        untagged: (removed ?? []).flatMap((r) => (r.Untagged ? [r.Untagged] : [])),
        deleted: (removed ?? []).some((r) => r.Deleted === info.Id),
      });
    } catch (err) {
      if (isNotFound(err)) return {}; // removed meanwhile
      throw err;
    }
    return {};
  };
}
