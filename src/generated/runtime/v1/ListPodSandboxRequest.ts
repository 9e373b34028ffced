// Original file: proto/runtime/v1/api.proto

import type { PodSandboxFilter as _runtime_v1_PodSandboxFilter, PodSandboxFilter__Output as _runtime_v1_PodSandboxFilter__Output } from '../../runtime/v1/PodSandboxFilter';

export interface ListPodSandboxRequest {
  'filter'?: (_runtime_v1_PodSandboxFilter | null);
}

export interface ListPodSandboxRequest__Output {
  'filter': (_runtime_v1_PodSandboxFilter__Output | null);
}
