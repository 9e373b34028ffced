import { failedPrecondition } from '../errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { LogManager } from '../logs/log-manager';
import { mustFindContainer } from '../container/lookup';
import { CONTAINER_LOGPATH_LABEL } from '../labels';
import { checkId } from '../cri/validation';

export function reopenContainerLog(deps: ServiceDeps, logs: LogManager) {
  return async (req: RuntimeReq<'ReopenContainerLog'>, ctx: CallContext): Promise<RuntimeRes<'ReopenContainerLog'>> => {
    const id = checkId('container_id', req.container_id);
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id });
    if (!info.State.Running) throw failedPrecondition(`container ${info.Id} is not running`);
    let reopened: boolean;
    try {
      reopened = logs.reopen(info.Id);
    } catch (err) {
      // e.g. a symlink planted where the rotated file was: the copier keeps its old file
      throw failedPrecondition(`ReopenContainerLog ${info.Id}: ${(err as Error).message}`);
    }
    if (!reopened) {
      const logPath = info.Config.Labels[CONTAINER_LOGPATH_LABEL];
      if (!logPath) throw failedPrecondition(`container ${info.Id} has no log path`);
      // no copier (e.g. it died): start one, which opens the file afresh
      logs.follow(info.Id, logPath, info.Config.Tty);
    }
    return {};
  };
}
