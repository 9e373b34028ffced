import type { ServiceDeps } from '../service-deps';

/** Stops a container, ignoring "already gone" and "already stopped". */
export async function stopQuietly(deps: ServiceDeps, id: string, graceSeconds: number): Promise<void> {
  await deps.docker.stopContainer(id, graceSeconds, { missingOk: true });
}
