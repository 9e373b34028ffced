// Original file: proto/runtime/v1/api.proto

import type { PodSandboxStats as _runtime_v1_PodSandboxStats, PodSandboxStats__Output as _runtime_v1_PodSandboxStats__Output } from '../../runtime/v1/PodSandboxStats';

export interface ListPodSandboxStatsResponse {
  'stats'?: (_runtime_v1_PodSandboxStats)[];
}

export interface ListPodSandboxStatsResponse__Output {
  'stats': (_runtime_v1_PodSandboxStats__Output)[];
}
