import type { Check } from '../types';

/** CNI plugins that accept a pod's forwarded traffic in iptables' FORWARD chain themselves. */
const ACCEPTS_FORWARD = new Set(['firewall']);

/**
 * Docker sets iptables' FORWARD policy to DROP and loads br_netfilter, so packets between two
 * pods on a CNI bridge are filtered there and dropped unless a rule accepts them (node-to-pod
 * traffic is not forwarded, so it still works and hides the problem).
 */
export const podForwardingCheck: Check = {
  name: 'pod-forwarding',
  async run({ config, probes }) {
    const name = this.name;
    if (config.networkPlugin === 'none') return { name, status: 'ok', found: '--network-plugin none: no pod network' };
    const conf = probes.cniConfig(config.cniConfDir, config.cniBinDirs).config;
    if (!conf) return { name, status: 'ok', found: 'no CNI config to check (see cni-config)' };
    const types = conf.plugins.map((p) => p.type);
    if (types.some((t) => ACCEPTS_FORWARD.has(t)))
      return { name, status: 'ok', found: `${conf.file} accepts pod traffic in FORWARD (firewall plugin)` };
    const policy = await probes.forwardPolicy();
    if (policy === undefined)
      return { name, status: 'ok', found: 'iptables FORWARD policy unreadable (no iptables here?): not checked' };
    if (policy !== 'DROP') return { name, status: 'ok', found: `iptables FORWARD policy ${policy}` };
    const bridgeFiltered = (await probes.readText('/proc/sys/net/bridge/bridge-nf-call-iptables'))?.trim() === '1';
    if (types.includes('bridge') && !bridgeFiltered)
      return { name, status: 'ok', found: 'FORWARD policy DROP, but bridged traffic bypasses iptables' };
    return {
      name,
      status: 'warn',
      found: `iptables FORWARD policy DROP (Docker sets it) and ${conf.file} has no firewall plugin: traffic between pods is dropped`,
      action: `append {"type": "firewall"} to the plugins of ${conf.file} (as /usr/share/doc/crishim/examples/10-crishim.conflist does); pods set up from then on can reach each other`,
    };
  },
};
