import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { mustFindContainer } from '../container/lookup';
import { stopQuietly } from '../container/stop-quietly';
import { checkId } from '../cri/validation';

export function stopContainer(deps: ServiceDeps) {
  return async (req: RuntimeReq<'StopContainer'>, ctx: CallContext): Promise<RuntimeRes<'StopContainer'>> => {
    const id = checkId('container_id', req.container_id);
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id });
    const timeout = Number(req.timeout ?? '0');
    try {
      // Docker sends the image's stop signal, then SIGKILL after the timeout
      await stopQuietly(deps, info.Id, Number.isFinite(timeout) && timeout > 0 ? timeout : 0);
    } catch (err) {
      throw fromDockerError(err, `StopContainer ${info.Id}`);
    }
    ctx.log.info('container stopped');
    return {};
  };
}
