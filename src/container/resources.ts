import type * as Docker from '../docker/types';
import { fromDockerError } from '../docker/errors';
import type { CallContext } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { cgroupVersionOf, checkHugepageLimits, dockerResources } from '../cri/container-resources';
import type { HugetlbCgroup } from '../cgroups/hugetlb';
import { forgetKept } from '../stats/files';

type Resources = Parameters<typeof dockerResources>[0];

/**
 * Applies CRI resources to a live Docker container (a pod's pause container included);
 * `target` is the caller's inspect of it, whose pid locates the hugetlb cgroup.
 */
export async function applyResources(
  deps: ServiceDeps,
  target: Pick<Docker.ContainerInspectInfo, 'Id' | 'State'>,
  resources: Resources,
  what: string,
  ctx: CallContext,
  hugetlb: HugetlbCgroup,
): Promise<void> {
  const id = target.Id;
  const update = dockerResources(resources, deps.oomScoreAdjFloor, cgroupVersionOf(deps.engine));
  // Docker cannot change oom_score_adj of a live container
  delete update.OomScoreAdj;
  if (Object.keys(update).length > 0) {
    try {
      await deps.docker.updateContainer(id, update);
    } catch (err) {
      throw fromDockerError(err, `${what} ${id}`);
    } finally {
      // the next stats call reports the new limit (a failed update may have changed some of it)
      forgetKept();
    }
    ctx.log.info('resources updated', { update });
  }
  const hugepages = checkHugepageLimits(resources?.hugepage_limits);
  if (hugepages.length === 0) return;
  // Docker has no field for them: a running container's limits go straight to its cgroup
  if (!target.State.Pid) {
    ctx.log.warn('container is not running: resources.hugepage_limits not applied', { containerId: id });
    return;
  }
  await hugetlb.apply(target.State.Pid, id, hugepages, ctx.log);
}
