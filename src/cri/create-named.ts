import type Docker from 'dockerode';
import type { CallContext } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { ROOT_LABEL } from './labels';
import { withRandomSuffix } from './naming';

const isConflict = (err: unknown): boolean => (err as { statusCode?: number }).statusCode === 409;

/**
 * Creates a container under its dockershim name. When the name is taken by a container of
 * this crishim that never started (a crash between Docker's create and our reply leaves one,
 * and the kubelet then retries with the same name), that leftover is removed and the name
 * reused, as dockershim does, so no orphan stays behind. Any other holder keeps its name and
 * the new container gets a random suffix.
 */
export async function createNamed(
  deps: Pick<ServiceDeps, 'docker' | 'config'>,
  ctx: CallContext,
  name: string,
  create: (name: string) => Promise<Docker.Container>,
): Promise<Docker.Container> {
  try {
    return await create(name);
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  const holder = await deps.docker.getContainer(name).inspect().catch(() => undefined);
  if (holder && holder.State.Status === 'created' && holder.Config.Labels?.[ROOT_LABEL] === deps.config.rootDirectory) {
    ctx.log.warn('removing a never-started leftover that holds the name', { name, leftoverId: holder.Id });
    try {
      await deps.docker.getContainer(holder.Id).remove({ v: true });
      return await create(name);
    } catch (err) {
      if (!isConflict(err) && (err as { statusCode?: number }).statusCode !== 404) throw err;
    }
  }
  ctx.log.warn('container name taken; creating with a random suffix', { name, holderId: holder?.Id });
  return create(withRandomSuffix(name));
}
