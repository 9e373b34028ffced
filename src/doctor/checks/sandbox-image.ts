import type { Check } from '../types';

export const sandboxImageCheck: Check = {
  name: 'sandbox-image',
  async run({ config, engine, probes }) {
    const image = config.podInfraContainerImage;
    if (!engine.reachable)
      return {
        name: this.name,
        status: 'fail',
        found: `${image}: not known, Docker does not answer`,
        action: 'see docker-endpoint',
      };
    if (await probes.imagePresent(image)) return { name: this.name, status: 'ok', found: `${image} is present` };
    const err = await probes.registryError(image);
    if (!err)
      return {
        name: this.name,
        status: 'warn',
        found: `${image} is not present; its registry answers, the first pod pulls it`,
        action: `docker pull ${image} to start the first pod faster`,
      };
    return {
      name: this.name,
      status: 'fail',
      found: `${image} is not present and cannot be pulled: ${err}`,
      action: `docker load the image, or set --pod-infra-container-image to one that is present`,
    };
  },
};
