import { normalizeRef } from '../docker/images';
import { DomainError } from '../errors';
import type { CallContext, ImageReq, ImageRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { dockerAuth, type PullCoalescer } from '../images/pull';
import { inspectImage, requireImageRef } from '../images/image-common';

export function pullImageRpc(deps: ServiceDeps, pulls: PullCoalescer) {
  return async (req: ImageReq<'PullImage'>, ctx: CallContext): Promise<ImageRes<'PullImage'>> => {
    const ref = normalizeRef(requireImageRef(req.image));
    ctx.annotate({ image: ref });
    const auth = dockerAuth(req.auth, ref);
    const { joined } = await pulls.pull(ref, auth, ctx.signal, ctx.log);
    // the id, not the name: the same value ImageStatus reports as id and ContainerStatus as image_ref
    const info = await inspectImage(deps, ref);
    if (!info) throw new DomainError('internal', `pull image ${ref}: pulled, but Docker does not have it`);
    ctx.log.info('image pulled', { image: ref, imageId: info.Id, coalesced: joined });
    return { image_ref: info.Id };
  };
}
