import type { ServiceDeps } from '../service-deps';

/**
 * Force-removes a Docker container; gone already is fine, and so is a removal
 * someone else started (Docker answers 409 "already in progress"): we wait for it.
 */
export async function removeDockerContainer(deps: ServiceDeps, id: string): Promise<void> {
  try {
    await deps.docker.removeContainer(id, { force: true, volumes: true, missingOk: true });
  } catch (err) {
    if (!/already in progress/.test((err as Error).message)) throw err;
    for (let i = 0; i < 100; i++) {
      if (!(await deps.docker.findContainer(id))) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw err;
  }
}
