import type { Check } from '../types';

export const cniConfigCheck: Check = {
  name: 'cni-config',
  async run({ config, probes }) {
    if (config.networkPlugin === 'none')
      return { name: this.name, status: 'ok', found: '--network-plugin none: pods get only loopback' };
    const r = probes.cniConfig(config.cniConfDir, config.cniBinDirs);
    if (r.problem || !r.config) {
      return {
        name: this.name,
        status: 'fail',
        found: r.problem ?? `no CNI configuration file in ${config.cniConfDir}`,
        action: `put a CNI config in ${config.cniConfDir} (example: /usr/share/doc/crishim/examples/10-crishim.conflist) and its plugins in ${config.cniBinDirs.join(':')}`,
      };
    }
    const types = r.config.plugins.map((p) => p.type).join(', ');
    return {
      name: this.name,
      status: 'ok',
      found: `${r.config.file} (network ${r.config.name}): plugins ${types} found in ${config.cniBinDirs.join(':')}`,
    };
  },
};
