import type { RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
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

/** Pause containers, from the state view when there is one, else from one Docker list call. */
async function pauseContainers(deps: ServiceDeps, idPrefix: string): Promise<ListedContainer[]> {
  if (deps.state) {
    return (await deps.state.list())
      .filter((c) => c.Config.Labels?.[TYPE_LABEL] === TYPE_SANDBOX && c.Id.startsWith(idPrefix))
      .map(summaryOf);
  }
  const dockerFilters: Record<string, string[]> = { label: [`${TYPE_LABEL}=${TYPE_SANDBOX}`] };
  if (idPrefix) dockerFilters.id = [idPrefix];
  return deps.docker.listContainers(dockerFilters);
}

/** Every sandbox: its pause container, plus checkpoints whose pause container is gone (NOTREADY). */
export async function listSandboxes(deps: ServiceDeps, filter: Filter): Promise<PodSandbox[]> {
  const containers = await pauseContainers(deps, filter?.id ?? '');
  const items = containers.map(fromDocker);
  const seen = new Set(items.map((s) => s.id));
  for (const id of await deps.checkpoints.list()) {
    if (seen.has(id) || (filter?.id && !id.startsWith(filter.id))) continue;
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
  return items.filter((s) => matches(s, filter));
}
