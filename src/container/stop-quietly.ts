import { isDockerNotFound } from '../docker/errors';
import type { ServiceDeps } from '../rpc/deps';

/** Stops a container, ignoring "already gone" and "already stopped". */
export async function stopQuietly(deps: ServiceDeps, id: string, graceSeconds: number): Promise<void> {
  try {
    await deps.docker.getContainer(id).stop({ t: graceSeconds });
  } catch (err) {
    const code = (err as { statusCode?: number }).statusCode;
    if (code === 304 || isDockerNotFound(err)) return;
    throw err;
  }
}
