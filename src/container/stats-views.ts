import type * as Docker from '../docker/types';
import type { RuntimeReq } from '../server/rpc';
import { createStatsCollector, type StatsCollector } from '../stats/collector';
import type { ServiceDeps } from '../service-deps';
import { STATUS_READ } from '../state/store';
import { listContainers } from './list';
import { listSandboxes } from '../sandbox/list';
import type { ContainerView, PodView } from '../cri/stats-convert';

type ContainerFilter = RuntimeReq<'ListContainerStats'>['filter'];
type PodFilter = RuntimeReq<'ListPodSandboxStats'>['filter'];
type Identified = { id?: string | null };

/** What the stats and metrics RPCs read: CRI containers and pods with their samples. */
export interface StatsViews {
  mountpoint(): string;
  containerViews(filter: ContainerFilter, signal: AbortSignal): Promise<ContainerView[]>;
  podViews(filter: PodFilter, signal: AbortSignal): Promise<PodView[]>;
}

/**
 * The views behind the stats and metrics RPCs. The containers and their facts (pid, cgroup parent,
 * upper dir) come from the state view, so no RPC calls Docker in the steady
 * state; the rest is cgroup and /proc files (cgroup paths read once per process
 * start, see stats/facts.ts), so dockerd does no work per container, unlike
 * `docker stats` (cri-dockerd issue 135).
 */
export function createStatsViews(
  deps: ServiceDeps,
  collector: StatsCollector = createStatsCollector(deps.docker, deps.logger, { view: deps.state, reuseMs: 500 }),
): StatsViews {
  /** fs_id of writable layers: Docker's data root, from the cached `docker info`. */
  const mountpoint = (): string => deps.engine.current().dockerRootDir ?? '/var/lib/docker';

  /**
   * The ids of an unfiltered list, one set per list: the lists are shared arrays the view hands
   * out again until something changes, so the collector sees the same set and can tell nothing
   * needs forgetting.
   */
  const idSets = new WeakMap<readonly Identified[], ReadonlySet<string>>();
  const idsOf = (items: readonly Identified[]): ReadonlySet<string> => {
    let ids = idSets.get(items);
    if (!ids) {
      ids = new Set(items.map((x) => x.id ?? ''));
      idSets.set(items, ids);
    }
    return ids;
  };

  let indexed:
    { list: readonly Docker.ContainerInspectInfo[]; byId: Map<string, Docker.ContainerInspectInfo> } | undefined;
  /**
   * Inspect answers by id from the state view, handed to the collector with each target: with
   * them it reads every container in one synchronous pass (no lookup, no await per container).
   * The view answers the same array until something changes: its index is made once per change.
   */
  const inspects = async (): Promise<Map<string, Docker.ContainerInspectInfo>> => {
    if (!deps.state) return new Map();
    const list = await deps.state.list(STATUS_READ);
    if (indexed?.list !== list) indexed = { list, byId: new Map(list.map((info) => [info.Id, info])) };
    return indexed.byId;
  };

  const containerViews = async (filter: ContainerFilter, signal: AbortSignal): Promise<ContainerView[]> => {
    const infos = inspects();
    const containers = await listContainers(deps, {
      id: filter?.id ?? '',
      pod_sandbox_id: filter?.pod_sandbox_id ?? '',
      label_selector: filter?.label_selector ?? {},
      state: null,
    });
    const unfiltered = !filter?.id && !filter?.pod_sandbox_id && Object.keys(filter?.label_selector ?? {}).length === 0;
    if (unfiltered) collector.retain(idsOf(containers), 'container');
    const byId = await infos;
    const samples = await collector.containers(
      containers.map((c) => ({ id: c.id ?? '', running: c.state === 'CONTAINER_RUNNING', info: byId.get(c.id ?? '') })),
      signal,
    );
    return containers.map((c, i) => ({ c, s: samples[i] }));
  };

  const podViews = async (filter: PodFilter, signal: AbortSignal): Promise<PodView[]> => {
    // a full sandbox id lets Docker filter the containers too
    const onePod = filter?.id?.length === 64 ? filter.id : '';
    const [sandboxes, containers, byId] = await Promise.all([
      listSandboxes(deps, { id: filter?.id ?? '', label_selector: filter?.label_selector ?? {}, state: null }),
      listContainers(deps, { id: '', pod_sandbox_id: onePod, label_selector: {}, state: null }),
      inspects(),
    ]);
    const unfiltered = !filter?.id && Object.keys(filter?.label_selector ?? {}).length === 0;
    if (unfiltered) {
      collector.retain(idsOf(sandboxes), 'sandbox');
      collector.retain(idsOf(containers), 'container');
    }
    const wanted = idsOf(sandboxes);
    const mine = containers.filter((c) => wanted.has(c.pod_sandbox_id ?? ''));
    const samples = await collector.containers(
      mine.map((c) => ({ id: c.id ?? '', running: c.state === 'CONTAINER_RUNNING', info: byId.get(c.id ?? '') })),
      signal,
    );
    const bySandbox = new Map<string, ContainerView[]>();
    mine.forEach((c, i) => {
      const list = bySandbox.get(c.pod_sandbox_id ?? '');
      if (list) list.push({ c, s: samples[i] });
      else bySandbox.set(c.pod_sandbox_id ?? '', [{ c, s: samples[i] }]);
    });
    const members = sandboxes.map((sb) => bySandbox.get(sb.id ?? '') ?? []);
    const pods = await collector.pods(
      sandboxes.map((sb, i) => ({
        sandbox: { id: sb.id ?? '', running: sb.state === 'SANDBOX_READY', info: byId.get(sb.id ?? '') },
        members: members[i].map((m) => m.s),
      })),
      signal,
    );
    return sandboxes.map((sb, i) => ({ sb, pod: pods[i], members: members[i] }));
  };

  return { mountpoint, containerViews, podViews };
}
