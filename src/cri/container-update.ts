import { invalidArgument, toCriError } from '../server/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { dockerResources } from './container-config';
import { mustFindContainer } from './container-lookup';
import { checkId } from './validation';

type Resources = Parameters<typeof dockerResources>[0];

/** Applies CRI resources to a live Docker container (a pod's pause container included). */
export async function applyResources(deps: ServiceDeps, id: string, resources: Resources, what: string, ctx: CallContext): Promise<void> {
  const update = dockerResources(resources, deps.oomScoreAdjFloor);
  // Docker cannot change oom_score_adj of a live container
  delete update.OomScoreAdj;
  if (Object.keys(update).length === 0) return;
  try {
    await deps.docker.getContainer(id).update(update);
  } catch (err) {
    throw toCriError(err, `${what} ${id}`);
  }
  ctx.log.info('resources updated', { update });
}

export function updateContainerResources(deps: ServiceDeps) {
  return async (req: RuntimeReq<'UpdateContainerResources'>, ctx: CallContext): Promise<RuntimeRes<'UpdateContainerResources'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.linux) throw invalidArgument('linux resources must be set');
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id });
    await applyResources(deps, info.Id, req.linux, 'UpdateContainerResources', ctx);
    return {};
  };
}
