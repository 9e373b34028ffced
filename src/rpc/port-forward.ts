import { failedPrecondition, invalidArgument, notFound } from '../errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { checkId } from '../cri/validation';
import type { ExecDeps } from '../service-deps';
import { findAnyContainer } from '../state/lookup';
import { isSandboxContainer } from '../sandbox/lookup';

export function portForwardRpc(deps: ExecDeps) {
  return async (req: RuntimeReq<'PortForward'>, ctx: CallContext): Promise<RuntimeRes<'PortForward'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    for (const p of req.port ?? []) {
      if (!Number.isInteger(p) || p < 1 || p > 65535) throw invalidArgument(`invalid port ${p}`);
    }
    const info = await findAnyContainer(deps, id);
    // a container id (or any other Docker container) is not a pod: forwarding into it would bypass the pod's identity
    if (!info || !isSandboxContainer(info.Config.Labels)) throw notFound(`pod sandbox ${id}`);
    ctx.annotate({ podSandboxId: info.Id });
    if (!info.State.Running) throw failedPrecondition(`pod sandbox ${info.Id} is not running`);
    return { url: deps.streaming.issueUrl({ kind: 'portforward', podSandboxId: info.Id, ports: req.port ?? [] }) };
  };
}
