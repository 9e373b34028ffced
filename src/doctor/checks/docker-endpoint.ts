import type { Check } from '../types';

/** Where the daemon looks for Docker, as the operator would write it. */
export function endpointOf(dockerEndpoint: string, env: NodeJS.ProcessEnv = process.env): string {
  return dockerEndpoint || env.DOCKER_HOST || 'unix:///var/run/docker.sock';
}

export const dockerEndpointCheck: Check = {
  name: 'docker-endpoint',
  async run({ config, engine }) {
    const where = endpointOf(config.dockerEndpoint);
    if (engine.reachable) return { name: this.name, status: 'ok', found: `Docker answers at ${where}` };
    return {
      name: this.name,
      status: 'fail',
      found: `Docker does not answer at ${where}: ${engine.error ?? 'unknown error'}`,
      action: 'start dockerd (systemctl start docker), restart it if it hangs, or point --docker-endpoint at it',
    };
  },
};
