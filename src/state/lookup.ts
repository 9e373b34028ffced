import type { DockerEngine } from '../docker/engine';
import type { ContainerInfo, ReadOptions, StateStore } from './store';

/**
 * Inspects any container (id or unique prefix; a pause container too) from the view when there
 * is one: a container crishim just changed is being re-inspected, and this shares that answer.
 */
export function findAnyContainer(
  deps: { docker: DockerEngine; state?: StateStore },
  ref: string,
  opts?: ReadOptions,
): Promise<ContainerInfo | undefined> {
  return deps.state ? deps.state.get(ref, opts) : deps.docker.findContainer(ref);
}
