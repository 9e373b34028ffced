import type { Check } from '../types';

export const cgroupCheck: Check = {
  name: 'cgroup',
  async run({ engine }) {
    if (!engine.reachable)
      return {
        name: this.name,
        status: 'fail',
        found: 'not known: Docker does not answer',
        action: 'see docker-endpoint',
      };
    const driver = engine.cgroupDriver;
    const version = engine.cgroupVersion;
    if (!driver || !['cgroupfs', 'systemd'].includes(driver)) {
      return {
        name: this.name,
        status: 'warn',
        found: `Docker reports cgroup driver ${driver ?? 'none'}, cgroup v${version ?? '?'}`,
        action: 'run dockerd with native.cgroupdriver=systemd or cgroupfs',
      };
    }
    return {
      name: this.name,
      status: 'ok',
      found: `cgroup driver ${driver}, cgroup v${version ?? '?'} (the kubelet's cgroupDriver must be ${driver})`,
    };
  },
};
