import type { RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { memoized, summaryOf, type ListedContainer } from '../state/summary';
import { containerMetadata, criState } from './status';
import { CREATED_LABEL, matchesSelector, SANDBOX_ID_LABEL, splitLabels, TYPE_CONTAINER, TYPE_LABEL } from '../labels';
import { secondsToNanos } from '../time';

type CriContainer = NonNullable<RuntimeRes<'ListContainers'>['containers']>[number];
type Filter = RuntimeReq<'ListContainers'>['filter'];

const fromDocker = memoized(toCri);

function toCri(c: ListedContainer): CriContainer {
  const split = splitLabels(c.Labels);
  return {
    id: c.Id,
    pod_sandbox_id: c.Labels[SANDBOX_ID_LABEL] ?? '',
    metadata: containerMetadata(c.Labels, c.Names[0] ?? ''),
    image: { image: c.Image },
    image_ref: c.ImageID,
    image_id: c.ImageID,
    state: criState(c.State),
    created_at: c.Labels[CREATED_LABEL] ?? secondsToNanos(c.Created),
    labels: split.labels,
    annotations: split.annotations,
  };
}

/** CRI containers, from the state view when there is one, else from one Docker list call (filters pushed down). */
async function dockerContainers(deps: ServiceDeps, filter: Filter): Promise<ListedContainer[]> {
  if (deps.state) {
    // the cheap filters first: the kubelet's per-pod sync asks for one pod's containers
    const pod = filter?.pod_sandbox_id ?? '';
    const id = filter?.id ?? '';
    return (await deps.state.list())
      .filter(
        (c) =>
          c.Config.Labels?.[TYPE_LABEL] === TYPE_CONTAINER &&
          c.Id.startsWith(id) &&
          (c.Config.Labels[SANDBOX_ID_LABEL] ?? '').startsWith(pod),
      )
      .map(summaryOf);
  }
  const labels = [`${TYPE_LABEL}=${TYPE_CONTAINER}`];
  // a full id can be pushed down to Docker; a prefix is matched below
  if (filter?.pod_sandbox_id?.length === 64) labels.push(`${SANDBOX_ID_LABEL}=${filter.pod_sandbox_id}`);
  const dockerFilters: Record<string, string[]> = { label: labels };
  if (filter?.id) dockerFilters.id = [filter.id];
  return deps.docker.listContainers(dockerFilters);
}

/** All CRI containers matching a filter. */
export async function listContainers(deps: ServiceDeps, filter: Filter): Promise<CriContainer[]> {
  const items = (await dockerContainers(deps, filter)).map(fromDocker);
  return items.filter((c) => {
    if (filter?.id && !(c.id ?? '').startsWith(filter.id)) return false;
    if (filter?.pod_sandbox_id && !(c.pod_sandbox_id ?? '').startsWith(filter.pod_sandbox_id)) return false;
    if (filter?.state && c.state !== filter.state.state) return false;
    return matchesSelector(c.labels ?? {}, filter?.label_selector);
  });
}
