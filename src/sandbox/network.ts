import type { CallContext } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { CREATED_LABEL } from '../labels';
import { recordMetadata, type SandboxRecord } from './lookup';
import { cniPortMappings } from './port-mappings';

/** A host-network pod has no CNI network to set up or tear down. */
export function isHostNetwork(rec: SandboxRecord): boolean {
  if (rec.checkpoint) return rec.checkpoint.data.host_network === true;
  return rec.container?.HostConfig.NetworkMode === 'host';
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
