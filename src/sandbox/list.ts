import type { RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { STATUS_READ, type ContainerInfo, type StateStore } from '../state/store';
import { memoized, summaryOf, type ListedContainer } from '../state/summary';
import {
  CREATED_LABEL,
  matchesSelector,
  RUNTIME_HANDLER_LABEL,
  splitLabels,
  TYPE_LABEL,
  TYPE_SANDBOX,
} from '../labels';
import { metadataFromLabels } from './lookup';
import { secondsToNanos } from '../time';

type PodSandbox = NonNullable<RuntimeRes<'ListPodSandbox'>['items']>[number];
type Filter = RuntimeReq<'ListPodSandbox'>['filter'];

const fromDocker = memoized(toCri);

function toCri(c: ListedContainer): PodSandbox {
  const split = splitLabels(c.Labels);
  return {
    id: c.Id,
    metadata: metadataFromLabels(c.Labels, c.Names[0] ?? ''),
    state: c.State === 'running' ? 'SANDBOX_READY' : 'SANDBOX_NOTREADY',
    created_at: c.Labels[CREATED_LABEL] ?? secondsToNanos(c.Created),
    labels: split.labels,
    annotations: split.annotations,
    runtime_handler: c.Labels[RUNTIME_HANDLER_LABEL] ?? '',
  };
}

function matches(s: PodSandbox, filter: Filter): boolean {
  if (!filter) return true;
  if (filter.id && !(s.id ?? '').startsWith(filter.id)) return false;
  if (filter.state && s.state !== filter.state.state) return false;
  return matchesSelector(s.labels ?? {}, filter.label_selector);
}

const isSandbox = (c: ContainerInfo): boolean => c.Config.Labels?.[TYPE_LABEL] === TYPE_SANDBOX;

/** Sandboxes of these pause containers, plus checkpoints (with this id prefix) whose pause container is gone (NOTREADY). */
async function sandboxesOf(
  deps: ServiceDeps,
  containers: ListedContainer[],
  checkpointIds: readonly string[],
  idPrefix: string,
): Promise<PodSandbox[]> {
  const items = containers.map(fromDocker);
  const seen = new Set(items.map((s) => s.id));
  for (const id of checkpointIds) {
    if (seen.has(id) || !id.startsWith(idPrefix)) continue;
    const cp = await deps.checkpoints.read(id);
    if (!cp) continue;
    items.push({
      id,
      metadata: {
        name: cp.name,
        namespace: cp.namespace,
        uid: cp.crishim?.uid ?? '',
        attempt: cp.crishim?.attempt ?? 0,
      },
      state: 'SANDBOX_NOTREADY',
      created_at: cp.crishim?.created_at ?? '0',
      labels: cp.crishim?.labels ?? {},
      annotations: cp.crishim?.annotations ?? {},
      runtime_handler: cp.crishim?.runtime_handler ?? '',
    });
  }
  return items;
}

/**
 * The last unfiltered answer from the state view, with what it was made of: the view and the
 * checkpoint store hand out the same arrays until something changes, and the kubelet relists
 * every second, so most relists return this same array (and the encoder its same bytes).
 */
let lastFromView:
  { containers: readonly ContainerInfo[]; checkpointIds: readonly string[]; items: PodSandbox[] } | undefined;

async function allFromView(deps: ServiceDeps, state: StateStore): Promise<PodSandbox[]> {
  const containers = await state.list(STATUS_READ);
  const checkpointIds = await deps.checkpoints.list();
  if (lastFromView?.containers === containers && lastFromView.checkpointIds === checkpointIds)
    return lastFromView.items;
  const items = await sandboxesOf(deps, containers.filter(isSandbox).map(summaryOf), checkpointIds, '');
  lastFromView = { containers, checkpointIds, items };
  return items;
}

const isFiltered = (filter: Filter): boolean =>
  !!filter && (!!filter.id || !!filter.state || Object.keys(filter.label_selector ?? {}).length > 0);

/**
 * Every sandbox the filter selects: its pause container, plus checkpoints whose pause container is
 * gone (NOTREADY). Unfiltered, the array may be shared with other callers: never mutate it.
 */
export async function listSandboxes(deps: ServiceDeps, filter: Filter): Promise<PodSandbox[]> {
  let items: PodSandbox[];
  if (deps.state) {
    items = await allFromView(deps, deps.state);
  } else {
    // one Docker list call, the id prefix pushed down
    const idPrefix = filter?.id ?? '';
    const dockerFilters: Record<string, string[]> = { label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] };
    if (idPrefix) dockerFilters.id = [idPrefix];
    const containers = await deps.docker.listContainers(dockerFilters);
    items = await sandboxesOf(deps, containers, await deps.checkpoints.list(), idPrefix);
  }
  return isFiltered(filter) ? items.filter((s) => matches(s, filter)) : items;
}
