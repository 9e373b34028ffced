import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { findSandbox } from '../sandbox/lookup';
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
