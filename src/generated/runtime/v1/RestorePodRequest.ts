// Original file: proto/runtime/v1/api.proto

import type { PodSandboxConfig as _runtime_v1_PodSandboxConfig, PodSandboxConfig__Output as _runtime_v1_PodSandboxConfig__Output } from '../../runtime/v1/PodSandboxConfig';
import type { ContainerConfig as _runtime_v1_ContainerConfig, ContainerConfig__Output as _runtime_v1_ContainerConfig__Output } from '../../runtime/v1/ContainerConfig';

export interface RestorePodRequest {
  'checkpoint_path'?: (string);
  'config'?: (_runtime_v1_PodSandboxConfig | null);
  'runtime_handler'?: (string);
  'options'?: ({[key: string]: string});
  'container_configs'?: (_runtime_v1_ContainerConfig)[];
}

export interface RestorePodRequest__Output {
  'checkpoint_path': (string);
  'config': (_runtime_v1_PodSandboxConfig__Output | null);
  'runtime_handler': (string);
  'options': ({[key: string]: string});
  'container_configs': (_runtime_v1_ContainerConfig__Output)[];
}
