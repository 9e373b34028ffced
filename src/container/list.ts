import type { RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { STATUS_READ, type ContainerInfo, type StateStore } from '../state/store';
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

const isContainer = (c: ContainerInfo): boolean => c.Config.Labels?.[TYPE_LABEL] === TYPE_CONTAINER;

/** The last answer made from the state view, with the view's array it was made of (see sandbox/list.ts). */
let lastFromView: { containers: readonly ContainerInfo[]; items: CriContainer[] } | undefined;

async function allFromView(state: StateStore): Promise<CriContainer[]> {
  const containers = await state.list(STATUS_READ);
  if (lastFromView?.containers !== containers)
    lastFromView = { containers, items: containers.filter(isContainer).map(summaryOf).map(fromDocker) };
  return lastFromView.items;
}

/** From one Docker list call, the filters Docker can apply pushed down. */
async function fromDockerList(deps: ServiceDeps, filter: Filter): Promise<CriContainer[]> {
  const labels = [`${TYPE_LABEL}=${TYPE_CONTAINER}`];
  // a full id can be pushed down to Docker; a prefix is matched below
  if (filter?.pod_sandbox_id?.length === 64) labels.push(`${SANDBOX_ID_LABEL}=${filter.pod_sandbox_id}`);
  const dockerFilters: Record<string, string[]> = { label: labels };
  if (filter?.id) dockerFilters.id = [filter.id];
  return (await deps.docker.listContainers(dockerFilters)).map(fromDocker);
}

const isFiltered = (filter: Filter): boolean =>
  !!filter &&
  (!!filter.id || !!filter.pod_sandbox_id || !!filter.state || Object.keys(filter.label_selector ?? {}).length > 0);

/** All CRI containers matching a filter. Unfiltered, the array may be shared with other callers: never mutate it. */
export async function listContainers(deps: ServiceDeps, filter: Filter): Promise<CriContainer[]> {
  const items = deps.state ? await allFromView(deps.state) : await fromDockerList(deps, filter);
  if (!isFiltered(filter)) return items;
  return items.filter((c) => {
    if (filter?.id && !(c.id ?? '').startsWith(filter.id)) return false;
    if (filter?.pod_sandbox_id && !(c.pod_sandbox_id ?? '').startsWith(filter.pod_sandbox_id)) return false;
    if (filter?.state && c.state !== filter.state.state) return false;
    return matchesSelector(c.labels ?? {}, filter?.label_selector);
  });
}
