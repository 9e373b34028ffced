import type * as Docker from '../docker/types';
import type { Logger } from '../logging/logger';
import { shortId } from '../logging/logger';
import type { SandboxCheckpoint } from '../checkpoint/store';
import type { ServiceDeps } from '../service-deps';
import { promises as fsp } from 'fs';
import * as path from 'path';
import {
  CONTAINER_LOGPATH_LABEL,
  CREATED_LABEL,
  ROOT_LABEL,
  SANDBOX_ID_LABEL,
  TYPE_CONTAINER,
  TYPE_LABEL,
  TYPE_SANDBOX,
} from '../labels';
import { removeDockerContainer } from '../container/remove';
import { releaseCachedNetwork, releaseOrphanNetworks, TeardownRetries } from '../network/orphan-teardown';

export interface ReconcileOptions {
  /**
   * Only sandboxes created before this time (ns, crishim's clock) are undone: set
   * when RPCs are being served, so an in-flight RunPodSandbox is left alone.
   */
  createdBefore?: bigint;
}

/**
 * Start-up reconciliation of Docker, checkpoints and the CNI cache, so a crash at
 * any step of RunPodSandbox leaves nothing behind once crishim is back:
 *  - a checkpoint still `creating` is a RunPodSandbox that never answered: its
 *    network, pause container and checkpoint are undone (the kubelet retries);
 *  - a pause container crishim created but never started (Docker state `created`)
 *    is removed unless its checkpoint shows it got past the start (a host-network
 *    checkpoint is `ready` before the start, so it does not count);
 *  - a container crishim created but never started is removed: its CreateContainer never
 *    answered, or its StartContainer never reached Docker. Left in place, the kubelet would
 *    count it as a failed attempt and create the next one beside it, reporting a restart
 *    that never happened; without it the kubelet creates the same attempt again. Its CRI log
 *    file goes too when StartContainer made it and nothing was written: a kubelet that finds no
 *    container counts restarts from the log files in the container's log directory;
 *  - CNI state of a sandbox that has neither container nor checkpoint is released.
 * Containers crishim did not create (no crishim labels, e.g. cri-dockerd's) are
 * never touched; sandboxes whose container vanished keep their checkpoint and are
 * reported NOTREADY until the kubelet removes them. Resolves false when Docker
 * could not be listed (nothing was done).
 */
export async function reconcile(deps: ServiceDeps, logger: Logger, opts: ReconcileOptions = {}): Promise<boolean> {
  const log = logger.child({ component: 'recovery' });
  let sandboxes: Docker.ContainerInfo[];
  try {
    sandboxes = await deps.docker.listContainers({ label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] });
  } catch (err) {
    log.warn('docker unreachable: reconciliation skipped until it is back', { error: (err as Error).message });
    return false;
  }
  const containerIds = new Set(sandboxes.map((c) => c.Id));
  const checkpointIds = new Set(await deps.checkpoints.list());
  const oldEnough = (createdAt: string | undefined): boolean =>
    opts.createdBefore === undefined || olderThan(createdAt, opts.createdBefore);

  for (const id of checkpointIds) {
    const cp = await deps.checkpoints.read(id);
    if (cp?.crishim?.phase !== 'creating' || !oldEnough(cp.crishim.created_at)) continue;
    log.warn('undoing a RunPodSandbox interrupted by a restart', {
      podSandboxId: shortId(id),
      pod: `${cp.namespace}/${cp.name}`,
    });
    await undo(deps, id, log);
    containerIds.delete(id);
    checkpointIds.delete(id);
  }

  for (const c of sandboxes) {
    // created by this crishim (same root directory), not by cri-dockerd or another crishim
    const ours = c.Labels[ROOT_LABEL] === deps.config.rootDirectory;
    if (!ours || c.State !== 'created' || !oldEnough(c.Labels[CREATED_LABEL])) continue;
    const cp = checkpointIds.has(c.Id) ? await deps.checkpoints.read(c.Id) : undefined;
    if (pastStart(cp)) continue;
    log.warn('removing a pause container created but never started before a crash', {
      podSandboxId: shortId(c.Id),
      checkpoint: Boolean(cp),
    });
    await undo(deps, c.Id, log);
    containerIds.delete(c.Id);
    checkpointIds.delete(c.Id);
  }

  await removeNeverStarted(deps, log, oldEnough);
  await releaseOrphanNetworks(deps, log, (id) => containerIds.has(id) || checkpointIds.has(id));
  return true;
}

async function removeNeverStarted(
  deps: ServiceDeps,
  log: Logger,
  oldEnough: (createdAt: string | undefined) => boolean,
): Promise<void> {
  const created = await deps.docker
    .listContainers({
      label: [`${TYPE_LABEL}=${TYPE_CONTAINER}`, `${ROOT_LABEL}=${deps.config.rootDirectory}`],
      status: ['created'],
    })
    .catch((err: Error) => {
      log.warn('cannot list never-started containers', { error: err.message });
      return [];
    });
  for (const c of created) {
    if (!oldEnough(c.Labels[CREATED_LABEL])) continue;
    const ids = { containerId: shortId(c.Id), podSandboxId: shortId(c.Labels[SANDBOX_ID_LABEL] ?? '') };
    log.warn('removing a container created but never started before a restart', ids);
    try {
      await removeDockerContainer(deps, c.Id);
      await removeUnwrittenLog(c.Labels[CONTAINER_LOGPATH_LABEL]);
    } catch (err) {
      log.error('could not remove a never-started container; will retry at the next start', {
        ...ids,
        error: (err as Error).message,
      });
    }
  }
}

/** An empty CRI log file of a container that never ran; a file with content is left alone. */
async function removeUnwrittenLog(logPath: string | undefined): Promise<void> {
  if (!logPath || !path.isAbsolute(logPath)) return;
  const st = await fsp.lstat(logPath).catch(() => undefined);
  if (st?.isFile() && st.size === 0) await fsp.rm(logPath, { force: true });
}

/** A `ready` checkpoint proves the start happened, except a host-network one (written `ready` before it). */
function pastStart(cp: SandboxCheckpoint | undefined): boolean {
  if (!cp) return false;
  if (cp.crishim?.phase === 'creating') return false;
  return !cp.data?.host_network;
}

/** Unknown or unparseable creation times count as old: such objects predate this process. */
function olderThan(createdAt: string | undefined, limit: bigint): boolean {
  if (!createdAt || !/^\d+$/.test(createdAt)) return true;
  return BigInt(createdAt) < limit;
}

async function undo(deps: ServiceDeps, id: string, log: Logger): Promise<void> {
  try {
    if (await deps.network.podNetwork(id)) await releaseCachedNetwork(deps.network, id);
    await removeDockerContainer(deps, id);
    await deps.checkpoints.remove(id);
  } catch (err) {
    log.error('could not undo an interrupted sandbox; will retry at the next start', {
      podSandboxId: shortId(id),
      error: (err as Error).message,
    });
  }
}

/** Retries orphaned CNI teardowns in the background (e.g. a DEL that failed during RemovePodSandbox). */
export function startNetworkJanitor(
  deps: ServiceDeps,
  logger: Logger,
  intervalMs = 60_000,
  retries = new TeardownRetries(),
): () => void {
  const log = logger.child({ component: 'janitor' });
  const timer = setInterval(() => {
    void (async () => {
      const checkpoints = new Set(await deps.checkpoints.list());
      // Docker down: we cannot tell what exists, so this round releases nothing
      const listed = await deps.docker
        .listContainers({ label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] })
        .catch(() => undefined);
      if (!listed) return;
      const containers = new Set(listed.map((c) => c.Id));
      await releaseOrphanNetworks(deps, log, (id) => checkpoints.has(id) || containers.has(id), retries);
    })().catch((err: unknown) => log.warn('network janitor round failed', { error: String(err) }));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
