// Original file: proto/runtime/v1/api.proto

import type { PodSandboxStatsFilter as _runtime_v1_PodSandboxStatsFilter, PodSandboxStatsFilter__Output as _runtime_v1_PodSandboxStatsFilter__Output } from '../../runtime/v1/PodSandboxStatsFilter';

export interface ListPodSandboxStatsRequest {
  'filter'?: (_runtime_v1_PodSandboxStatsFilter | null);
}

export interface ListPodSandboxStatsRequest__Output {
  'filter': (_runtime_v1_PodSandboxStatsFilter__Output | null);
}
