// Original file: proto/runtime/v1/api.proto

import type { ContainerConfig as _runtime_v1_ContainerConfig, ContainerConfig__Output as _runtime_v1_ContainerConfig__Output } from '../../runtime/v1/ContainerConfig';
import type { PodSandboxConfig as _runtime_v1_PodSandboxConfig, PodSandboxConfig__Output as _runtime_v1_PodSandboxConfig__Output } from '../../runtime/v1/PodSandboxConfig';

export interface CreateContainerRequest {
  'pod_sandbox_id'?: (string);
  'config'?: (_runtime_v1_ContainerConfig | null);
  'sandbox_config'?: (_runtime_v1_PodSandboxConfig | null);
}

export interface CreateContainerRequest__Output {
  'pod_sandbox_id': (string);
  'config': (_runtime_v1_ContainerConfig__Output | null);
  'sandbox_config': (_runtime_v1_PodSandboxConfig__Output | null);
}
