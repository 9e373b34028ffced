import type { NetworkPlugin } from './types';

/** `--network-plugin=none`: no pod networking beyond what Docker gives. */
export function nonePlugin(): NetworkPlugin {
  return {
    name: 'none',
    status: () => ({ ready: true, reason: '', message: '' }),
    setUpPod: async () => ({ ips: [], networkName: 'none' }),
    tearDownPod: async () => undefined,
    podNetwork: async () => undefined,
    cachedSandboxes: async () => [],
    setPodCidr: () => undefined,
    close: () => undefined,
  };
}
