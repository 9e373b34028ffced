import type * as Docker from '../docker/types';
import type { ContainerInfo } from './store';

/** The fields of Docker's list answer (GET /containers/json) that List RPCs read. */
export type ListedContainer = Pick<
  Docker.ContainerInfo,
  'Id' | 'Names' | 'Image' | 'ImageID' | 'Labels' | 'State' | 'Created'
>;

const summaries = new WeakMap<ContainerInfo, ListedContainer>();

/**
 * What `docker ps -a` would show for an inspected container, so list code reads one shape
 * from either source. Memoized per inspect answer: the view keeps the same object until it
 * re-inspects, so the relist every second converts only what changed.
 */
export function summaryOf(info: ContainerInfo): ListedContainer {
  let s = summaries.get(info);
  if (!s) {
    s = summarize(info);
    summaries.set(info, s);
  }
  return s;
}

/**
 * `convert` applied once per listed container (as long as it is the same object): list
 * code keeps its CRI message per view entry. The results are shared: never mutate them.
 */
export function memoized<T>(convert: (c: ListedContainer) => T): (c: ListedContainer) => T {
  const cache = new WeakMap<ListedContainer, T>();
  return (c) => {
    let v = cache.get(c);
    if (v === undefined) {
      v = convert(c);
      cache.set(c, v);
    }
    return v;
  };
}

function summarize(info: ContainerInfo): ListedContainer {
  return {
    Id: info.Id,
    Names: [info.Name],
    Image: info.Config.Image,
    ImageID: info.Image,
    Labels: info.Config.Labels ?? {},
    State: info.State.Status,
    Created: Math.floor(Date.parse(info.Created) / 1000),
  };
}
