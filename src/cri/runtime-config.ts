import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { failedPrecondition, invalidArgument, notFound, unimplemented } from '../server/errors';
import type { ServiceDeps } from './deps';
import { applyResources } from './container-update';
import { findSandbox } from './sandbox-lookup';
import { checkId } from './validation';

/** UpdateRuntimeConfig: the pod CIDR reaches CNI plugins through runtimeConfig. */
export function updateRuntimeConfig(deps: ServiceDeps) {
  return async (req: RuntimeReq<'UpdateRuntimeConfig'>, ctx: CallContext): Promise<RuntimeRes<'UpdateRuntimeConfig'>> => {
    const cidr = req.runtime_config?.network_config?.pod_cidr ?? '';
    if (cidr && !/^[0-9a-fA-F.:]+\/\d{1,3}(,[0-9a-fA-F.:]+\/\d{1,3})*$/.test(cidr)) {
      throw invalidArgument(`runtime_config.network_config.pod_cidr ${JSON.stringify(cidr)} is not a CIDR`);
    }
    if (cidr) {
      deps.network.setPodCidr(cidr);
      ctx.log.info('pod CIDR updated', { podCidr: cidr });
    }
    return {};
  };
}

/** RuntimeConfig: the kubelet must run with the cgroup driver Docker uses. */
export function runtimeConfig(deps: ServiceDeps) {
  return async (_req: RuntimeReq<'RuntimeConfig'>, _ctx: CallContext): Promise<RuntimeRes<'RuntimeConfig'>> => {
    let engine = deps.engine.current();
    if (!engine.cgroupDriver) engine = await deps.engine.refresh();
    return { linux: { cgroup_driver: engine.cgroupDriver === 'systemd' ? 'SYSTEMD' : 'CGROUPFS' } };
  };
}

/** Pod-level resources: applied to the pause container, whose cgroup Docker manages. */
export function updatePodSandboxResources(deps: ServiceDeps) {
  return async (req: RuntimeReq<'UpdatePodSandboxResources'>, ctx: CallContext): Promise<RuntimeRes<'UpdatePodSandboxResources'>> => {
    const id = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const rec = await findSandbox(deps, id);
    if (!rec) throw notFound(`pod sandbox ${id}`);
    ctx.annotate({ podSandboxId: rec.id });
    if (!rec.container?.State.Running) throw failedPrecondition(`pod sandbox ${rec.id} is not ready`);
    await applyResources(deps, rec.id, req.resources, 'UpdatePodSandboxResources', ctx);
    return {};
  };
}

/**
 * Docker's checkpoint support is experimental, needs CRIU and cannot export an
 * archive the kubelet can restore elsewhere, so these answer why they are absent.
 */
export function checkpointUnsupported(method: string) {
  return async (): Promise<never> => {
    throw unimplemented(`${method}: Docker Engine checkpoints need experimental mode and CRIU, and export no archive a CRI client can restore; crishim does not offer it`);
  };
}
