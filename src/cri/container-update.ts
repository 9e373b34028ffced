import { invalidArgument, toCriError } from '../server/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { dockerResources } from './container-config';
import { mustFindContainer } from './container-lookup';
import { checkId } from './validation';

export function updateContainerResources(deps: ServiceDeps) {
  return async (req: RuntimeReq<'UpdateContainerResources'>, ctx: CallContext): Promise<RuntimeRes<'UpdateContainerResources'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.linux) throw invalidArgument('linux resources must be set');
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id });
    const update = dockerResources(req.linux, deps.oomScoreAdjFloor);
    // Docker cannot change oom_score_adj of a live container
    delete update.OomScoreAdj;
    if (Object.keys(update).length === 0) return {};
    try {
      await deps.docker.getContainer(info.Id).update(update);
    } catch (err) {
      throw toCriError(err, `UpdateContainerResources ${info.Id}`);
    }
    ctx.log.info('container resources updated', { update });
    return {};
  };
}
