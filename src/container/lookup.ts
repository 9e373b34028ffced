import type * as Docker from '../docker/types';
import { failedPrecondition, notFound } from '../errors';
import type { CallContext } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { TYPE_CONTAINER, TYPE_LABEL } from '../labels';
import { findAnyContainer } from '../state/lookup';
import type { ReadOptions } from '../state/store';

/** Inspects a CRI container (id or unique prefix); undefined when Docker has none of ours. */
export async function findContainer(
  deps: Pick<ServiceDeps, 'docker' | 'state'>,
  id: string,
  opts?: ReadOptions,
): Promise<Docker.ContainerInspectInfo | undefined> {
  const info = await findAnyContainer(deps, id, opts);
  if (!info) return undefined;
  return info.Config.Labels?.[TYPE_LABEL] === TYPE_CONTAINER ? info : undefined;
}

export async function mustFindContainer(
  deps: Pick<ServiceDeps, 'docker' | 'state'>,
  id: string,
  opts?: ReadOptions,
): Promise<Docker.ContainerInspectInfo> {
  const info = await findContainer(deps, id, opts);
  if (!info) throw notFound(`container ${id}`);
  return info;
}

/** Exec, ExecSync and Attach: a CRI container that is running; annotates the call with its id. */
export async function mustFindRunningContainer(
  deps: Pick<ServiceDeps, 'docker' | 'state'>,
  id: string,
  ctx: CallContext,
): Promise<Docker.ContainerInspectInfo> {
  const info = await mustFindContainer(deps, id);
  ctx.annotate({ containerId: info.Id });
  if (!info.State.Running) throw failedPrecondition(`container ${info.Id} is not running`);
  return info;
}
