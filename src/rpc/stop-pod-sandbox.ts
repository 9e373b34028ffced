import { notFound } from '../errors';
import { fromDockerError, isDockerNotFound } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { summaryOf, type ListedContainer } from '../state/summary';
import { CREATED_LABEL, SANDBOX_ID_LABEL } from '../labels';
import { findSandbox, recordMetadata, type SandboxRecord } from '../sandbox/lookup';
import { cniPortMappings } from './run-pod-sandbox';
import { checkId } from '../cri/validation';

/** The pause process exits on SIGTERM at once; the grace period only covers a wedged one. */
const SANDBOX_STOP_GRACE_SECONDS = 10;
/** CNI DEL tries per StopPodSandbox before the error goes back to the kubelet (which retries too). */
const DEL_ATTEMPTS = 3;

export function isHostNetwork(rec: SandboxRecord): boolean {
  if (rec.checkpoint) return rec.checkpoint.data.host_network === true;
  return rec.container?.HostConfig.NetworkMode === 'host';
}

/** Docker containers (not the pause one) that belong to a sandbox. */
export async function sandboxMembers(deps: ServiceDeps, sandboxId: string): Promise<ListedContainer[]> {
  if (deps.state) return (await deps.state.list()).filter((c) => c.Config.Labels?.[SANDBOX_ID_LABEL] === sandboxId).map(summaryOf);
  return deps.docker.listContainers({ all: true, filters: { label: [`${SANDBOX_ID_LABEL}=${sandboxId}`] } });
}

/** CNI DEL for a sandbox, from the cache (works with the pause container gone). */
export async function tearDownNetwork(deps: ServiceDeps, rec: SandboxRecord, ctx: CallContext): Promise<void> {
  if (isHostNetwork(rec)) return;
  const meta = recordMetadata(rec);
  const pid = rec.container?.State.Running ? rec.container.State.Pid : 0;
  await deps.network.tearDownPod({
    podName: meta.name,
    podNamespace: meta.namespace,
    podUid: meta.uid,
    sandboxId: rec.id,
    netnsPath: pid ? `/proc/${pid}/ns/net` : '',
    portMappings: cniPortMappings(rec.checkpoint?.data.port_mappings ?? []),
    signal: ctx.signal,
    // no crishim labels: cri-dockerd set this pod's network up, not us
    adopted: rec.container ? rec.container.Config.Labels?.[CREATED_LABEL] === undefined : !rec.checkpoint?.crishim,
  });
}

/** Stops a container, ignoring "already gone" and "already stopped". */
export async function stopQuietly(deps: ServiceDeps, id: string, graceSeconds: number): Promise<void> {
  try {
    await deps.docker.getContainer(id).stop({ t: graceSeconds });
  } catch (err) {
    const code = (err as { statusCode?: number }).statusCode;
    if (code === 304 || isDockerNotFound(err)) return;
    throw err;
  }
}

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
    ctx.log.info('pod sandbox stopped');
    return {};
  };
}
