import { notFound } from '../errors';
import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { findSandbox } from '../sandbox/lookup';
import { tearDownNetwork } from '../sandbox/network';
import { sandboxMembers } from '../sandbox/members';
import { stopQuietly } from '../container/stop-quietly';
import { checkId } from '../cri/validation';
import { releaseNetDev } from '../stats/netdev';

/** The pause process exits on SIGTERM at once; the grace period only covers a wedged one. */
const SANDBOX_STOP_GRACE_SECONDS = 10;
/** CNI DEL tries per StopPodSandbox before the error goes back to the kubelet (which retries too). */
const DEL_ATTEMPTS = 3;

export function stopPodSandbox(deps: ServiceDeps) {
  return async (req: RuntimeReq<'StopPodSandbox'>, ctx: CallContext): Promise<RuntimeRes<'StopPodSandbox'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const rec = await findSandbox(deps, id);
    if (!rec) throw notFound(`pod sandbox ${id}`);
    ctx.annotate({ podSandboxId: rec.id });
    const network = (async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await tearDownNetwork(deps, rec, ctx);
        } catch (err) {
          if (attempt >= DEL_ATTEMPTS || ctx.signal.aborted) {
            throw fromDockerError(err, `StopPodSandbox ${rec.id}: tear down pod network (${attempt} attempts)`);
          }
          ctx.log.warn('CNI DEL failed; retrying', { attempt, error: (err as Error).message });
          await new Promise((r) => setTimeout(r, 200 * attempt));
        }
      }
    })();
    // CRI: containers still running at this point are terminated at once. They do not hold
    // the netns (the pause process does), so this runs beside the CNI DEL instead of after it.
    const members = (async () => {
      const all = await sandboxMembers(deps, rec.id);
      await Promise.all(all.filter((c) => c.State === 'running').map((c) => stopQuietly(deps, c.Id, 0)));
    })().catch((err: unknown) => {
      throw fromDockerError(err, `StopPodSandbox ${rec.id}: stop containers`);
    });
    const [net, ctrs] = await Promise.allSettled([network, members]);
    if (net.status === 'rejected') throw net.reason;
    if (ctrs.status === 'rejected') throw ctrs.reason;
    // network first: the netns is held by the pause process until now
    try {
      if (rec.container) await stopQuietly(deps, rec.id, SANDBOX_STOP_GRACE_SECONDS);
    } catch (err) {
      throw fromDockerError(err, `StopPodSandbox ${rec.id}`);
    }
    // stats keep the pause process's net/dev open, which holds the netns: let it go with the pod
    if (rec.container?.State.Pid) releaseNetDev(rec.container.State.Pid);
    ctx.log.info('pod sandbox stopped');
    return {};
  };
}
