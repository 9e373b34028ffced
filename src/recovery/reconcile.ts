import type * as Docker from '../docker/types';
import type { Logger } from '../logging/logger';
import { shortId } from '../logging/logger';
import type { SandboxCheckpoint } from '../checkpoint/store';
import type { ServiceDeps } from '../rpc/deps';
import { CREATED_LABEL, ROOT_LABEL, TYPE_LABEL, TYPE_SANDBOX } from '../labels';
import { removeDockerContainer } from '../container/remove';

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
    sandboxes = await deps.docker.listContainers({ all: true, filters: { label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] } });
  } catch (err) {
    log.warn('docker unreachable: reconciliation skipped until it is back', { error: (err as Error).message });
    return false;
  }
  const containerIds = new Set(sandboxes.map((c) => c.Id));
  const checkpointIds = new Set(await deps.checkpoints.list());
  const oldEnough = (createdAt: string | undefined): boolean => opts.createdBefore === undefined || olderThan(createdAt, opts.createdBefore);

  for (const id of checkpointIds) {
    const cp = await deps.checkpoints.read(id);
    if (cp?.crishim?.phase !== 'creating' || !oldEnough(cp.crishim.created_at)) continue;
    log.warn('undoing a RunPodSandbox interrupted by a restart', { podSandboxId: shortId(id), pod: `${cp.namespace}/${cp.name}` });
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
    log.warn('removing a pause container created but never started before a crash', { podSandboxId: shortId(c.Id), checkpoint: Boolean(cp) });
    await undo(deps, c.Id, log);
    containerIds.delete(c.Id);
    checkpointIds.delete(c.Id);
  }

  await releaseOrphanNetworks(deps, log, (id) => containerIds.has(id) || checkpointIds.has(id));
  return true;
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
    if (await deps.network.podNetwork(id)) {
      await deps.network.tearDownPod({ podName: '', podNamespace: '', podUid: '', sandboxId: id, netnsPath: '', portMappings: [] });
    }
    await removeDockerContainer(deps, id);
    await deps.checkpoints.remove(id);
  } catch (err) {
    log.error('could not undo an interrupted sandbox; will retry at the next start', { podSandboxId: shortId(id), error: (err as Error).message });
  }
}

/**
 * Back-off and a retry budget for orphaned CNI teardowns, per sandbox id. A DEL that can
 * never succeed (e.g. a plugin config it refuses) must not run every round forever: after
 * each failure a sandbox sits out twice as many rounds as before, and after `maxAttempts`
 * failures it is given up on (one warning says what stays behind).
 */
export class TeardownRetries {
  private readonly state = new Map<string, { failures: number; skip: number }>();
  constructor(readonly maxAttempts = 8, readonly maxSkip = 60) {}

  /** Whether this round should try `id` (counts the rounds it sits out). */
  due(id: string): boolean {
    const s = this.state.get(id);
    if (!s) return true;
    if (s.failures >= this.maxAttempts) return false;
    if (s.skip > 0) {
      s.skip -= 1;
      return false;
    }
    return true;
  }

  /** Records a failure; true when that was the last attempt. */
  failed(id: string): boolean {
    const s = this.state.get(id) ?? { failures: 0, skip: 0 };
    s.failures += 1;
    s.skip = Math.min(2 ** (s.failures - 1) - 1, this.maxSkip);
    this.state.set(id, s);
    return s.failures >= this.maxAttempts;
  }

  succeeded(id: string): void {
    this.state.delete(id);
  }
}

/** CNI DEL for cached networks whose sandbox is gone; failures stay cached for a later round (see TeardownRetries). */
export async function releaseOrphanNetworks(deps: ServiceDeps, log: Logger, known: (id: string) => boolean, retries?: TeardownRetries): Promise<void> {
  for (const id of await deps.network.cachedSandboxes()) {
    if (known(id)) continue;
    if (retries && !retries.due(id)) continue;
    try {
      await deps.network.tearDownPod({ podName: '', podNamespace: '', podUid: '', sandboxId: id, netnsPath: '', portMappings: [] });
      retries?.succeeded(id);
      log.info('released the network of a sandbox that no longer exists', { podSandboxId: shortId(id) });
    } catch (err) {
      const error = (err as Error).message;
      if (!retries?.failed(id)) {
        log.warn('CNI DEL of an orphaned sandbox failed; will retry', { podSandboxId: shortId(id), error });
        continue;
      }
      const net = await deps.network.podNetwork(id).catch(() => undefined);
      log.warn('giving up on CNI DEL of an orphaned sandbox; its network setup stays behind (IP reservation, host port and masquerade rules) until removed by hand', {
        podSandboxId: id,
        attempts: retries.maxAttempts,
        ips: net?.ips ?? [],
        network: net?.networkName ?? '',
        error,
      });
    }
  }
}

/** Retries orphaned CNI teardowns in the background (e.g. a DEL that failed during RemovePodSandbox). */
export function startNetworkJanitor(deps: ServiceDeps, logger: Logger, intervalMs = 60_000, retries = new TeardownRetries()): () => void {
  const log = logger.child({ component: 'janitor' });
  const timer = setInterval(() => {
    void (async () => {
      const checkpoints = new Set(await deps.checkpoints.list());
      // Docker down: we cannot tell what exists, so this round releases nothing
      const listed = await deps.docker.listContainers({ all: true, filters: { label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] } }).catch(() => undefined);
      if (!listed) return;
      const containers = new Set(listed.map((c) => c.Id));
      await releaseOrphanNetworks(deps, log, (id) => checkpoints.has(id) || containers.has(id), retries);
    })().catch((err: unknown) => log.warn('network janitor round failed', { error: String(err) }));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
