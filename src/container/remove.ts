import { dockerMessage, isDockerNotFound } from '../docker/errors';
import type { ServiceDeps } from '../rpc/deps';

/**
 * Force-removes a Docker container; gone already is fine, and so is a removal
 * someone else started (Docker answers 409 "already in progress"): we wait for it.
 */
export async function removeDockerContainer(deps: ServiceDeps, id: string): Promise<void> {
  try {
    await deps.docker.getContainer(id).remove({ force: true, v: true });
  } catch (err) {
    if (isDockerNotFound(err)) return;
    if (!/already in progress/.test(dockerMessage(err))) throw err;
    for (let i = 0; i < 100; i++) {
      try {
        await deps.docker.getContainer(id).inspect();
      } catch (e) {
        if (isDockerNotFound(e)) return;
        throw e;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw err;
  }
}
