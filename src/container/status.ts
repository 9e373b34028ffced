import type * as Docker from '../docker/types';
import type { RuntimeRes } from '../server/rpc';
import type { HugepageLimit } from '../cri/container-resources';
import {
  CONTAINER_LOGPATH_LABEL,
  CONTAINER_NAME_LABEL,
  CREATED_LABEL,
  SANDBOX_ID_LABEL,
  ATTEMPT_LABEL,
  splitLabels,
  USER_IMAGE_LABEL,
} from '../labels';
import { statusImage, type ImageNaming } from '../images/image-names';
import { parseName } from '../cri/naming';
import { rfc3339ToNanos } from '../time';
import { criStopSignal } from '../cri/stop-signal';

export type CriContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
export type CriContainerStatus = NonNullable<RuntimeRes<'ContainerStatus'>['status']>;

/** Docker's state names onto CRI's four. */
export function criState(dockerState: string | undefined): CriContainerState {
  switch (dockerState) {
    case 'created':
      return 'CONTAINER_CREATED';
    case 'running':
    case 'paused':
    case 'restarting':
      return 'CONTAINER_RUNNING';
    case 'exited':
    case 'dead':
    case 'removing':
      return 'CONTAINER_EXITED';
    default:
      return 'CONTAINER_UNKNOWN';
  }
}

/** Container metadata: our labels first, the dockershim name for cri-dockerd's containers. */
export function containerMetadata(
  labels: Record<string, string> | undefined,
  dockerName: string,
): { name: string; attempt: number } {
  const parsed = parseName(dockerName);
  const attempt = Number(labels?.[ATTEMPT_LABEL]);
  return {
    name: labels?.[CONTAINER_NAME_LABEL] ?? parsed?.container ?? dockerName.replace(/^\//, ''),
    attempt: Number.isInteger(attempt) ? attempt : (parsed?.pod.attempt ?? 0),
  };
}

const PROPAGATION: Record<
  string,
  'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL'
> = {
  rslave: 'PROPAGATION_HOST_TO_CONTAINER',
  slave: 'PROPAGATION_HOST_TO_CONTAINER',
  rshared: 'PROPAGATION_BIDIRECTIONAL',
  shared: 'PROPAGATION_BIDIRECTIONAL',
};

function reasonOf(state: Docker.ContainerInspectInfo['State']): string {
  if (state.Running || state.Status === 'created') return '';
  if (state.OOMKilled) return 'OOMKilled';
  return state.ExitCode === 0 ? 'Completed' : 'Error';
}

/**
 * CRI ContainerStatus from one Docker inspect; `hugepages` are the limits read from the
 * running container's cgroup (Docker does not know them); `naming`, the names Docker holds for
 * its image (without them the image is named as it was created).
 */
export function statusFromInspect(
  info: Docker.ContainerInspectInfo,
  hugepages: HugepageLimit[] = [],
  naming?: ImageNaming,
): CriContainerStatus {
  const labels = info.Config.Labels ?? {};
  const split = splitLabels(labels);
  const hc = info.HostConfig;
  const img = statusImage(
    { configImage: info.Config.Image, imageId: info.Image, userImage: labels[USER_IMAGE_LABEL] },
    naming,
  );
  return {
    id: info.Id,
    metadata: containerMetadata(labels, info.Name),
    state: criState(info.State.Status),
    created_at: labels[CREATED_LABEL] ?? rfc3339ToNanos(info.Created),
    started_at: rfc3339ToNanos(info.State.StartedAt),
    finished_at: info.State.Running ? '0' : rfc3339ToNanos(info.State.FinishedAt),
    exit_code: info.State.Running ? 0 : info.State.ExitCode,
    image: { image: img.image, user_specified_image: labels[USER_IMAGE_LABEL] ?? '' },
    image_ref: img.imageRef,
    image_id: info.Image,
    reason: reasonOf(info.State),
    message: info.State.Error ?? '',
    labels: split.labels,
    annotations: split.annotations,
    mounts: (info.Mounts ?? [])
      .filter((m) => m.Type === 'bind')
      .map((m) => ({
        container_path: m.Destination,
        host_path: m.Source,
        readonly: !m.RW,
        selinux_relabel: (m.Mode ?? '').includes('Z') || (m.Mode ?? '').includes('z'),
        propagation: PROPAGATION[m.Propagation] ?? 'PROPAGATION_PRIVATE',
      })),
    log_path: labels[CONTAINER_LOGPATH_LABEL] ?? '',
    // dockerode's inspect type lacks StopSignal, which Docker returns when the request or image set one
    stop_signal: criStopSignal((info.Config as { StopSignal?: string }).StopSignal),
    resources: {
      linux: {
        cpu_period: String(hc.CpuPeriod ?? 0),
        cpu_quota: String(hc.CpuQuota ?? 0),
        cpu_shares: String(hc.CpuShares ?? 0),
        memory_limit_in_bytes: String(hc.Memory ?? 0),
        oom_score_adj: String(hc.OomScoreAdj ?? 0),
        cpuset_cpus: hc.CpusetCpus ?? '',
        cpuset_mems: hc.CpusetMems ?? '',
        memory_swap_limit_in_bytes: String(hc.MemorySwap ?? 0),
        hugepage_limits: hugepages,
      },
    },
  };
}

export function sandboxIdOf(info: Docker.ContainerInspectInfo): string {
  return info.Config.Labels?.[SANDBOX_ID_LABEL] ?? '';
}
