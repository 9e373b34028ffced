import type * as Docker from '../docker/types';
import type { NameConflictPolicy } from '../docker/engine';
import type { CallContext } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import {
  ATTEMPT_LABEL,
  CONTAINER_NAME_LABEL,
  ROOT_LABEL,
  SANDBOX_ID_LABEL,
  TYPE_CONTAINER,
  TYPE_LABEL,
} from '../labels';

/** Which CRI container a Docker name stands for: the leftover rule only takes one of exactly this. */
export interface NameSlot {
  sandboxId: string;
  name: string;
  attempt: number;
}

/** True when `holder` is a never-started container of this crishim for the same sandbox, name and attempt. */
export function isOwnLeftover(holder: Docker.ContainerInspectInfo, slot: NameSlot, rootDirectory: string): boolean {
  const l = holder.Config.Labels ?? {};
  return (
    holder.State.Status === 'created' &&
    l[TYPE_LABEL] === TYPE_CONTAINER &&
    l[ROOT_LABEL] === rootDirectory &&
    l[SANDBOX_ID_LABEL] === slot.sandboxId &&
    l[CONTAINER_NAME_LABEL] === slot.name &&
    l[ATTEMPT_LABEL] === String(slot.attempt)
  );
}

/**
 * How a container is created under its dockershim name. When the name is taken by a
 * container of this crishim that never started and stands for the same sandbox, name and
 * attempt (a crash between Docker's create and our reply leaves one, and the kubelet then
 * retries), that leftover is removed and the name reused, so no orphan stays behind. Any
 * other holder keeps its name and the call fails with ALREADY_EXISTS, as containerd's "name
 * is reserved": `_` in pod and container names lets two different pods map to one Docker
 * name, and the other pod's container must never be taken for a leftover.
 */
export function reclaimOwnLeftover(
  deps: Pick<ServiceDeps, 'config'>,
  ctx: CallContext,
  slot: NameSlot,
): NameConflictPolicy {
  return {
    kind: 'reclaim',
    isLeftover: (holder) => isOwnLeftover(holder, slot, deps.config.rootDirectory),
    onReclaim: (holder) =>
      ctx.log.warn('removing a never-started leftover that holds the name', { leftoverId: holder.Id }),
  };
}
