import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { findSandbox, type SandboxRecord } from '../sandbox/lookup';
import { tearDownNetwork } from '../sandbox/network';
import { sandboxMembers } from '../sandbox/members';
import { removeDockerContainer } from '../container/remove';
import { checkId } from '../cri/validation';

/** Removes one member container with everything crishim keeps for it (log copier, log file). */
export type ContainerRemover = (containerId: string) => Promise<void>;

export function removePodSandbox(deps: ServiceDeps, removeContainer: ContainerRemover) {
  return async (req: RuntimeReq<'RemovePodSandbox'>, ctx: CallContext): Promise<RuntimeRes<'RemovePodSandbox'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const rec = await findSandbox(deps, id);
    // CRI: removing what is already gone succeeds
    if (!rec) return {};
    ctx.annotate({ podSandboxId: rec.id });
    try {
      // The members and the pause container go at once: Docker removes none of them faster
      // for the others being gone, and a pod of N containers would otherwise wait N + 1
      // removals in turn. Should one fail, the checkpoint stays and a retry finds the rest.
      const removals = (await sandboxMembers(deps, rec.id)).map((c) => removeContainer(c.Id));
      removals.push(removePause(deps, rec, ctx));
      for (const r of await Promise.allSettled(removals)) if (r.status === 'rejected') throw r.reason;
      await deps.checkpoints.remove(rec.id);
    } catch (err) {
      throw fromDockerError(err, `RemovePodSandbox ${rec.id}`);
    }
    ctx.log.info('pod sandbox removed');
    return {};
  };
}

/** Releases the pod's network if it is still set up, then removes the pause container. */
async function removePause(deps: ServiceDeps, rec: SandboxRecord, ctx: CallContext): Promise<void> {
  // the kubelet stops before removing, but a client may not: never leak an IP. The DEL
  // comes first, while the pause process still holds the netns its pid names. A DEL that
  // fails here must not make the sandbox unremovable: its cache entry stays and the
  // network janitor retries it.
  if (await deps.network.podNetwork(rec.id)) {
    await tearDownNetwork(deps, rec, ctx).catch((err: unknown) =>
      ctx.log.error('CNI DEL failed during removal; the janitor will retry it', { error: (err as Error).message }),
    );
  }
  if (rec.container) await removeDockerContainer(deps, rec.id);
}
