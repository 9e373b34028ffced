import { removeLogFile } from '../logging/safe-path';
import { failedPrecondition } from '../errors';
import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import type { LogManager } from './container-logs';
import { hugepageLimitsOf, type HugepageLimit } from './container-config';
import { findContainer, mustFindContainer } from './container-lookup';
import { defaultHugetlb, type HugetlbCgroup } from './container-update';
import { CONTAINER_LOGPATH_LABEL, SANDBOX_ID_LABEL } from './labels';
import { removeDockerContainer } from './sandbox-remove';
import { stopQuietly } from './sandbox-stop';
import { checkId } from './validation';

/** Start, stop, remove and log reopen: the RPCs that move a container between states. */

/**
 * Writes the hugepage limits recorded at create into the started container's cgroup.
 * When that fails the container is killed: it must not run without the limits it asked for.
 */
async function applyRecordedHugepages(deps: ServiceDeps, id: string, limits: HugepageLimit[], ctx: CallContext, hugetlb: HugetlbCgroup): Promise<void> {
  const container = deps.docker.getContainer(id);
  try {
    const pid = (await container.inspect()).State.Pid;
    if (pid) await hugetlb.apply(pid, id, limits, ctx.log);
  } catch (err) {
    await container.kill().catch(() => undefined);
    ctx.log.error('hugepage limits could not be applied; container killed', { error: (err as Error).message });
    throw fromDockerError(err, `StartContainer ${id}`);
  }
}

export function startContainer(deps: ServiceDeps, logs: LogManager, hugetlb: HugetlbCgroup = defaultHugetlb) {
  return async (req: RuntimeReq<'StartContainer'>, ctx: CallContext): Promise<RuntimeRes<'StartContainer'>> => {
    const id = checkId('container_id', req.container_id);
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id, podSandboxId: info.Config.Labels[SANDBOX_ID_LABEL] ?? '' });
    const sandboxId = info.Config.Labels[SANDBOX_ID_LABEL];
    if (sandboxId) {
      const sandbox = await deps.docker.getContainer(sandboxId).inspect().catch(() => undefined);
      if (!sandbox?.State.Running) throw failedPrecondition(`pod sandbox ${sandboxId} of container ${info.Id} is not ready`);
    }
    if (info.State.Running) throw failedPrecondition(`container ${info.Id} is already running`);
    try {
      await deps.docker.getContainer(info.Id).start({ abortSignal: ctx.signal });
    } catch (err) {
      throw fromDockerError(err, `StartContainer ${info.Id}`);
    }
    const hugepages = hugepageLimitsOf(info.Config.Labels);
    if (hugepages.length > 0) await applyRecordedHugepages(deps, info.Id, hugepages, ctx, hugetlb);
    const logPath = info.Config.Labels[CONTAINER_LOGPATH_LABEL];
    if (logPath) logs.follow(info.Id, logPath, info.Config.Tty);
    ctx.log.info('container started');
    return {};
  };
}

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

/** Removes a container, its log copier and the CRI log file crishim wrote. */
export async function removeContainerFully(deps: ServiceDeps, logs: LogManager, id: string): Promise<void> {
  const info = await findContainer(deps, id);
  if (!info) return;
  logs.stop(info.Id);
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
    deps.logger.warn('container log file left in place', { containerId: info.Id, logPath, error: (err as Error).message });
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
