import { dockerMessage, fromDockerError, isDockerNotFound } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { findSandbox } from '../sandbox/lookup';
import { sandboxMembers, tearDownNetwork } from './stop-pod-sandbox';
import { checkId } from '../cri/validation';

/** Removes one member container with everything crishim keeps for it (log copier, log file). */
export type ContainerRemover = (containerId: string) => Promise<void>;

/**
 * Force-removes a Docker container; gone already is fine, and so is a removal
 * someone else started (Docker answers 409 "already in progress"): we wait for it.
 */
export async function removeDockerContainer(deps: ServiceDeps, id: string): Promise<void> {
  try {
    await deps.docker.getContainer(id).remove({ force: true, v: true });
  } catch (err) {
    if (isDockerNotFound(err)) return;
    if (!/already in progress/.test(dockerMessage(err))) throw err;
    for (let i = 0; i < 100; i++) {
      try {
        await deps.docker.getContainer(id).inspect();
      } catch (e) {
        if (isDockerNotFound(e)) return;
        throw e;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw err;
  }
}

export function removePodSandbox(deps: ServiceDeps, removeContainer: ContainerRemover) {
  return async (req: RuntimeReq<'RemovePodSandbox'>, ctx: CallContext): Promise<RuntimeRes<'RemovePodSandbox'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const rec = await findSandbox(deps, id);
    // CRI: removing what is already gone succeeds
    if (!rec) return {};
    ctx.annotate({ podSandboxId: rec.id });
    try {
      for (const c of await sandboxMembers(deps, rec.id)) {
        await removeContainer(c.Id);
      }
      // the kubelet stops before removing, but a client may not: never leak an IP.
      // A DEL that fails here must not make the sandbox unremovable: its cache
      // entry stays and the network janitor retries it.
      if (await deps.network.podNetwork(rec.id)) {
        await tearDownNetwork(deps, rec, ctx).catch((err: unknown) =>
          ctx.log.error('CNI DEL failed during removal; the janitor will retry it', { error: (err as Error).message }),
        );
      }
      if (rec.container) await removeDockerContainer(deps, rec.id);
      await deps.checkpoints.remove(rec.id);
    } catch (err) {
      throw fromDockerError(err, `RemovePodSandbox ${rec.id}`);
    }
    ctx.log.info('pod sandbox removed');
    return {};
  };
}
