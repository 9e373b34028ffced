import type { RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { CREATED_LABEL, splitLabels } from '../labels';
import { recordMetadata, type SandboxRecord } from './lookup';
import { isHostNetwork } from './network';
import { rfc3339ToNanos } from '../time';

type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

function namespaceOptions(rec: SandboxRecord): { network: NamespaceMode; pid: NamespaceMode; ipc: NamespaceMode } {
  const hc = rec.container?.HostConfig;
  return {
    network: isHostNetwork(rec) ? 'NODE' : 'POD',
    pid: hc?.PidMode === 'host' ? 'NODE' : 'POD',
    ipc: hc?.IpcMode === 'host' ? 'NODE' : 'POD',
  };
}

export function sandboxCreatedAt(rec: SandboxRecord): string {
  return (
    rec.container?.Config.Labels?.[CREATED_LABEL] ??
    rec.checkpoint?.crishim?.created_at ??
    rfc3339ToNanos(rec.container?.Created)
  );
}

export type CriSandboxStatus = NonNullable<RuntimeRes<'PodSandboxStatus'>['status']>;

/** CRI PodSandboxStatus of a known sandbox (also used by the event stream). */
export async function sandboxStatusOf(deps: ServiceDeps, rec: SandboxRecord): Promise<CriSandboxStatus> {
  const ready = rec.container?.State.Running === true;
  const split = rec.container
    ? splitLabels(rec.container.Config.Labels)
    : { labels: rec.checkpoint?.crishim?.labels ?? {}, annotations: rec.checkpoint?.crishim?.annotations ?? {} };
  const net = isHostNetwork(rec) ? undefined : await deps.network.podNetwork(rec.id);
  return {
    id: rec.id,
    metadata: recordMetadata(rec),
    state: ready ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
    created_at: sandboxCreatedAt(rec),
    network: net
      ? { ip: net.ips[0] ?? '', additional_ips: net.ips.slice(1).map((ip) => ({ ip })) }
      : { ip: '', additional_ips: [] },
    linux: { namespaces: { options: namespaceOptions(rec) } },
    labels: split.labels,
    annotations: split.annotations,
    runtime_handler: rec.checkpoint?.crishim?.runtime_handler ?? '',
  };
}
