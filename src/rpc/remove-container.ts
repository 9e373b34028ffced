import { removeLogFile } from '../logging/safe-path';
import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { LogManager } from '../logs/log-manager';
import { findContainer } from '../container/lookup';
import { CONTAINER_LOGPATH_LABEL } from '../labels';
import { removeDockerContainer } from '../container/remove';
import { checkId } from '../cri/validation';

/** Removes a container, its log copier and the CRI log file crishim wrote. */
export async function removeContainerFully(deps: ServiceDeps, logs: LogManager, id: string): Promise<void> {
  const info = await findContainer(deps, id);
  if (!info) return;
  await logs.remove(info.Id);
  try {
    await removeDockerContainer(deps, info.Id);
  } catch (err) {
    throw fromDockerError(err, `RemoveContainer ${info.Id}`);
  }
  const logPath = info.Config.Labels[CONTAINER_LOGPATH_LABEL];
  if (!logPath) return;
  try {
    await removeLogFile(logPath);
  } catch (err) {
    // the container is gone; a log file we may not safely touch stays where it is
    deps.logger.warn('container log file left in place', {
      containerId: info.Id,
      logPath,
      error: (err as Error).message,
    });
  }
}

export function removeContainer(deps: ServiceDeps, logs: LogManager) {
  return async (req: RuntimeReq<'RemoveContainer'>, ctx: CallContext): Promise<RuntimeRes<'RemoveContainer'>> => {
    const id = checkId('container_id', req.container_id);
    ctx.annotate({ containerId: id });
    await removeContainerFully(deps, logs, id);
    ctx.log.info('container removed');
    return {};
  };
}
