import type Docker from 'dockerode';
import type { Logger } from '../logging/logger';
import { shortId } from '../logging/logger';
import type { ServiceDeps } from './deps';
import { ROOT_LABEL, TYPE_LABEL, TYPE_SANDBOX } from './labels';
import { removeDockerContainer } from './sandbox-remove';

/**
 * Start-up reconciliation of Docker, checkpoints and the CNI cache, so a crash at
 * any step of RunPodSandbox leaves nothing behind once crishim is back:
 *  - a checkpoint still `creating` is a RunPodSandbox that never answered: its
 *    network, pause container and checkpoint are undone (the kubelet retries);
 *  - a pause container crishim created but never started and never checkpointed
 *    is removed;
 *  - CNI state of a sandbox that has neither container nor checkpoint is released.
 * Containers crishim did not create (no crishim labels, e.g. cri-dockerd's) are
 * never touched; sandboxes whose container vanished keep their checkpoint and are
 * reported NOTREADY until the kubelet removes them.
 */
export async function reconcile(deps: ServiceDeps, logger: Logger): Promise<void> {
  const log = logger.child({ component: 'recovery' });
  let sandboxes: Docker.ContainerInfo[];
  try {
    sandboxes = await deps.docker.listContainers({ all: true, filters: { label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] } });
  } catch (err) {
    log.warn('docker unreachable: start-up reconciliation skipped', { error: (err as Error).message });
    return;
  }
  const containerIds = new Set(sandboxes.map((c) => c.Id));
  const checkpointIds = new Set(await deps.checkpoints.list());

  for (const id of checkpointIds) {
    const cp = await deps.checkpoints.read(id);
    if (cp?.crishim?.phase !== 'creating') continue;
    log.warn('undoing a RunPodSandbox interrupted by a restart', { podSandboxId: shortId(id), pod: `${cp.namespace}/${cp.name}` });
    await undo(deps, id, log);
    containerIds.delete(id);
    checkpointIds.delete(id);
  }

  for (const c of sandboxes) {
    // created by this crishim (same root directory), not by cri-dockerd or another crishim
    const ours = c.Labels[ROOT_LABEL] === deps.config.rootDirectory;
    if (!ours || checkpointIds.has(c.Id) || c.State !== 'created') continue;
    log.warn('removing a pause container created right before a crash', { podSandboxId: shortId(c.Id) });
    await undo(deps, c.Id, log);
    containerIds.delete(c.Id);
  }

  await releaseOrphanNetworks(deps, log, (id) => containerIds.has(id) || checkpointIds.has(id));
}

async function undo(deps: ServiceDeps, id: string, log: Logger): Promise<void> {
  try {
    if (await deps.network.podNetwork(id)) {
      await deps.network.tearDownPod({ podName: '', podNamespace: '', podUid: '', sandboxId: id, netnsPath: '', portMappings: [] });
    }
    await removeDockerContainer(deps, id);
    await deps.checkpoints.remove(id);
  } catch (err) {
    log.error('could not undo an interrupted sandbox; will retry at the next start', { podSandboxId: shortId(id), error: (err as Error).message });
  }
}

/** CNI DEL for cached networks whose sandbox is gone; failures stay cached for the next round. */
export async function releaseOrphanNetworks(deps: ServiceDeps, log: Logger, known: (id: string) => boolean): Promise<void> {
  for (const id of await deps.network.cachedSandboxes()) {
    if (known(id)) continue;
    try {
      await deps.network.tearDownPod({ podName: '', podNamespace: '', podUid: '', sandboxId: id, netnsPath: '', portMappings: [] });
      log.info('released the network of a sandbox that no longer exists', { podSandboxId: shortId(id) });
    } catch (err) {
      log.warn('CNI DEL of an orphaned sandbox failed; will retry', { podSandboxId: shortId(id), error: (err as Error).message });
    }
  }
}

/** Retries orphaned CNI teardowns in the background (e.g. a DEL that failed during RemovePodSandbox). */
export function startNetworkJanitor(deps: ServiceDeps, logger: Logger, intervalMs = 60_000): () => void {
  const log = logger.child({ component: 'janitor' });
  const timer = setInterval(() => {
    void (async () => {
      const checkpoints = new Set(await deps.checkpoints.list());
      // Docker down: we cannot tell what exists, so this round releases nothing
      const listed = await deps.docker.listContainers({ all: true, filters: { label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] } }).catch(() => undefined);
      if (!listed) return;
      const containers = new Set(listed.map((c) => c.Id));
      await releaseOrphanNetworks(deps, log, (id) => checkpoints.has(id) || containers.has(id));
    })().catch((err: unknown) => log.warn('network janitor round failed', { error: String(err) }));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
