import { isIPv6 } from 'net';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { invalidArgument } from '../errors';
import type { ServiceDeps } from '../service-deps';

/** UpdateRuntimeConfig: the pod CIDR reaches CNI plugins through runtimeConfig. */
export function updateRuntimeConfig(deps: ServiceDeps) {
  return async (
    req: RuntimeReq<'UpdateRuntimeConfig'>,
    ctx: CallContext,
  ): Promise<RuntimeRes<'UpdateRuntimeConfig'>> => {
    const cidr = req.runtime_config?.network_config?.pod_cidr ?? '';
    if (cidr) {
      checkPodCidr('runtime_config.network_config.pod_cidr', cidr);
      deps.network.setPodCidr(cidr);
      ctx.log.info('pod CIDR updated', { podCidr: cidr });
    }
    return {};
  };
}

/**
 * A pod CIDR as the kubelet sends it: one CIDR, or an IPv4 and an IPv6 one
 * separated by a comma (dual stack). Strict, as Go's net.ParseCIDR: decimal
 * octets 0-255 without leading zeros, prefix 0-32 (IPv4) or 0-128 (IPv6).
 */
export function checkPodCidr(field: string, value: string): void {
  const parts = value.split(',').map((p) => p.trim());
  const families = parts.map((p) => cidrFamily(p));
  const bad = parts.find((_, i) => families[i] === undefined);
  if (bad !== undefined)
    throw invalidArgument(`${field}: ${JSON.stringify(bad)} is not an IPv4 or IPv6 CIDR (address/prefix)`);
  if (parts.length > 2 || new Set(families).size !== parts.length) {
    throw invalidArgument(
      `${field}: ${JSON.stringify(value)} must be one CIDR, or one IPv4 and one IPv6 CIDR separated by a comma`,
    );
  }
}

/** A decimal number without leading zeros, up to three digits (octets, prefix lengths). */
const DECIMAL = /^(0|[1-9]\d{0,2})$/;

function cidrFamily(cidr: string): 4 | 6 | undefined {
  const slash = cidr.indexOf('/');
  if (slash < 0) return undefined;
  const addr = cidr.slice(0, slash);
  const prefix = cidr.slice(slash + 1);
  if (!DECIMAL.test(prefix)) return undefined;
  const octets = addr.split('.');
  if (octets.length === 4 && octets.every((o) => DECIMAL.test(o) && Number(o) <= 255))
    return Number(prefix) <= 32 ? 4 : undefined;
  if (addr.includes(':') && isIPv6(addr) && !addr.includes('%')) return Number(prefix) <= 128 ? 6 : undefined;
  return undefined;
}
