import type * as Docker from '../docker/types';
import { notFound } from '../errors';
import { fromDockerError, isDockerNotFound } from '../docker/errors';
import type { ServiceDeps } from '../rpc/deps';
import { TYPE_CONTAINER, TYPE_LABEL } from '../labels';

/** Inspects a CRI container (id or unique prefix); undefined when Docker has none of ours. */
export async function findContainer(deps: ServiceDeps, id: string): Promise<Docker.ContainerInspectInfo | undefined> {
  try {
    const info = deps.state ? await deps.state.get(id) : await deps.docker.getContainer(id).inspect();
    if (!info) return undefined;
    return info.Config.Labels?.[TYPE_LABEL] === TYPE_CONTAINER ? info : undefined;
  } catch (err) {
    if (isDockerNotFound(err)) return undefined;
    throw fromDockerError(err, `inspect container ${id}`);
  }
}

export async function mustFindContainer(deps: ServiceDeps, id: string): Promise<Docker.ContainerInspectInfo> {
  const info = await findContainer(deps, id);
  if (!info) throw notFound(`container ${id}`);
  return info;
}
