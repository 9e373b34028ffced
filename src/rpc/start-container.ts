import { failedPrecondition } from '../errors';
import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { LogManager } from '../logs/log-manager';
import { hugepageLimitsOf, type HugepageLimit } from '../cri/container-resources';
import { mustFindContainer } from '../container/lookup';
import { findAnyContainer } from '../state/lookup';
import type { HugetlbCgroup } from '../cgroups/hugetlb';
import { CONTAINER_LOGPATH_LABEL, SANDBOX_ID_LABEL } from '../labels';
import { checkId } from '../cri/validation';

/**
 * Writes the hugepage limits recorded at create into the started container's cgroup.
 * When that fails the container is killed: it must not run without the limits it asked for.
 */
async function applyRecordedHugepages(
  deps: ServiceDeps,
  id: string,
  limits: HugepageLimit[],
  ctx: CallContext,
  hugetlb: HugetlbCgroup,
): Promise<void> {
  try {
    const pid = (await deps.docker.inspectContainer(id)).State.Pid;
    if (pid) await hugetlb.apply(pid, id, limits, ctx.log);
  } catch (err) {
    await deps.docker.killContainer(id).catch(() => undefined);
    ctx.log.error('hugepage limits could not be applied; container killed', { error: (err as Error).message });
    throw fromDockerError(err, `StartContainer ${id}`);
  }
}

export function startContainer(deps: ServiceDeps, logs: LogManager, hugetlb: HugetlbCgroup) {
  return async (req: RuntimeReq<'StartContainer'>, ctx: CallContext): Promise<RuntimeRes<'StartContainer'>> => {
    const id = checkId('container_id', req.container_id);
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id, podSandboxId: info.Config.Labels[SANDBOX_ID_LABEL] ?? '' });
    const sandboxId = info.Config.Labels[SANDBOX_ID_LABEL];
    if (sandboxId) {
      const sandbox = await findAnyContainer(deps, sandboxId).catch(() => undefined);
      if (!sandbox?.State.Running)
        throw failedPrecondition(`pod sandbox ${sandboxId} of container ${info.Id} is not ready`);
    }
    if (info.State.Running) throw failedPrecondition(`container ${info.Id} is already running`);
    // the log copy begins before the start: a burst in the first moments is not rotated away unread
    const logPath = info.Config.Labels[CONTAINER_LOGPATH_LABEL];
    const logCopyStarted = logPath ? logs.beforeStart(info.Id, logPath, info.Config.Tty, info) : undefined;
    try {
      await deps.docker.startContainer(info.Id, { signal: ctx.signal });
    } catch (err) {
      await logCopyStarted?.(false);
      throw fromDockerError(err, `StartContainer ${info.Id}`);
    }
    await logCopyStarted?.(true);
    const hugepages = hugepageLimitsOf(info.Config.Labels);
    if (hugepages.length > 0) await applyRecordedHugepages(deps, info.Id, hugepages, ctx, hugetlb);
    ctx.log.info('container started');
    return {};
  };
}
