import type Docker from 'dockerode';
import type { ContainerInfo } from './store';

/** The fields of Docker's list answer (GET /containers/json) that List RPCs read. */
export type ListedContainer = Pick<Docker.ContainerInfo, 'Id' | 'Names' | 'Image' | 'ImageID' | 'Labels' | 'State' | 'Created'>;

/** What `docker ps -a` would show for an inspected container, so list code reads one shape from either source. */
export function summaryOf(info: ContainerInfo): ListedContainer {
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
