import type { CheckpointPortMapping } from '../checkpoint/store';
import type { PortMappingSpec } from '../network/types';
import type { SandboxConfig } from './pause-container';

export function portMappingsOf(config: SandboxConfig): CheckpointPortMapping[] {
  return (config.port_mappings ?? []).map((p) => ({
    protocol: p.protocol.toLowerCase(),
    container_port: p.container_port,
    host_port: p.host_port,
    host_ip: p.host_ip || undefined,
  }));
}

/** Only mappings with a host port reach the portmap plugin (the rest are informational). */
export function cniPortMappings(mappings: CheckpointPortMapping[]): PortMappingSpec[] {
  return mappings
    .filter((p) => p.host_port > 0)
    .map((p) => ({
      hostPort: p.host_port,
      containerPort: p.container_port,
      protocol: (p.protocol === 'udp' || p.protocol === 'sctp' ? p.protocol : 'tcp') as PortMappingSpec['protocol'],
      hostIP: p.host_ip,
    }));
}
