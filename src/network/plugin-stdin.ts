import type { NetworkConfList, PluginConf } from './cni-config';
import type { PluginStdin } from './cni-exec';
import type { CacheEntry } from './result-cache';
import type { PortMappingSpec } from './types';

/** Port mappings in the portmap plugin's form; an empty hostIP means "all addresses", which is the field left out. */
export function cniPortMappings(mappings: PortMappingSpec[]): PortMappingSpec[] {
  return mappings
    .filter((m) => m.hostPort > 0)
    .map(({ hostPort, containerPort, protocol, hostIP }) =>
      hostIP ? { hostPort, containerPort, protocol, hostIP } : { hostPort, containerPort, protocol },
    );
}

/** The JSON a plugin gets on stdin: its own entry plus the list's name/version and chained state. */
export function pluginStdin(
  list: NetworkConfList,
  plugin: PluginConf,
  opts: { prevResult?: unknown; portMappings: PortMappingSpec[]; podCidr?: string },
): PluginStdin {
  const conf: PluginStdin = { ...plugin, name: list.name, cniVersion: list.cniVersion };
  if (opts.prevResult !== undefined) conf.prevResult = opts.prevResult;
  // runtimeConfig carries only what the plugin declared a capability for (CNI conventions)
  const runtimeConfig: Record<string, unknown> = {};
  const portMappings = cniPortMappings(opts.portMappings);
  if (plugin.capabilities?.portMappings && portMappings.length > 0) runtimeConfig.portMappings = portMappings;
  if (plugin.capabilities?.ipRanges && opts.podCidr) {
    // one range set per CIDR (dual-stack "v4,v6" from UpdateRuntimeConfig)
    const subnets = opts.podCidr
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    runtimeConfig.ipRanges = subnets.map((subnet) => [{ subnet }]);
    if (isRecord(plugin.ipam)) conf.ipam = withoutStaticRanges(plugin.ipam, new Set(subnets.map(cidrFamily)));
  }
  if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
  return conf;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const cidrFamily = (cidr: string): 4 | 6 => (cidr.includes(':') ? 6 : 4);

/**
 * host-local prepends runtime ipRanges to its configured ranges (one address per
 * range set), so a pod CIDR inside the default range fails with "range set 0
 * overlaps with 1" and one outside it gives pods two addresses. The pod CIDR is
 * meant to replace the default: drop configured ranges of the families it covers.
 */
function withoutStaticRanges(ipam: Record<string, unknown>, families: Set<4 | 6>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...ipam };
  if (Array.isArray(ipam.ranges)) {
    out.ranges = ipam.ranges.filter((set: unknown) => {
      const first: unknown = Array.isArray(set) ? set[0] : undefined;
      return !(isRecord(first) && typeof first.subnet === 'string' && families.has(cidrFamily(first.subnet)));
    });
    if ((out.ranges as unknown[]).length === 0) delete out.ranges;
  }
  // the single-range form of older configs
  if (typeof ipam.subnet === 'string' && families.has(cidrFamily(ipam.subnet))) {
    for (const k of ['subnet', 'rangeStart', 'rangeEnd', 'gateway']) delete out[k];
  }
  return out;
}

/** The CNI_ARGS pairs the kubelet passes. */
export function podArgs(
  entry: Pick<CacheEntry, 'podNamespace' | 'podName' | 'sandboxId' | 'podUid'>,
): Record<string, string> {
  return {
    K8S_POD_NAMESPACE: entry.podNamespace,
    K8S_POD_NAME: entry.podName,
    K8S_POD_INFRA_CONTAINER_ID: entry.sandboxId,
    K8S_POD_UID: entry.podUid,
  };
}
