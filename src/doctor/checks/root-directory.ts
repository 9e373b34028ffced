import type { Check } from '../types';

export const rootDirectoryCheck: Check = {
  name: 'root-directory',
  async run({ config, probes }) {
    const err = await probes.writeError(config.rootDirectory);
    if (!err) return { name: this.name, status: 'ok', found: `${config.rootDirectory} is writable` };
    return {
      name: this.name,
      status: 'fail',
      found: `${config.rootDirectory} is not writable: ${err}`,
      action: 'run crishim as root, or choose another --root-directory',
    };
  },
};
