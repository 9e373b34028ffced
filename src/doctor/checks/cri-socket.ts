import type { Check } from '../types';

export const criSocketCheck: Check = {
  name: 'cri-socket',
  async run({ config, probes }) {
    const endpoint = config.containerRuntimeEndpoint;
    if (endpoint.startsWith('fd://'))
      return { name: this.name, status: 'ok', found: `${endpoint}: the socket comes from systemd (crishim.socket)` };
    const socketPath = endpoint.replace(/^unix:\/\//, '');
    switch (await probes.socketState(socketPath)) {
      case 'absent':
        return { name: this.name, status: 'ok', found: `${socketPath} is free` };
      case 'stale':
        return {
          name: this.name,
          status: 'ok',
          found: `${socketPath} is a stale socket (nothing listens); the daemon replaces it`,
        };
      case 'live':
        return {
          name: this.name,
          status: 'ok',
          found: `${socketPath} is served by a running daemon (a second one would refuse to start on it)`,
        };
      case 'not-a-socket':
        return {
          name: this.name,
          status: 'fail',
          found: `${socketPath} exists and is not a socket`,
          action: 'remove it, or choose another --container-runtime-endpoint',
        };
    }
  },
};
