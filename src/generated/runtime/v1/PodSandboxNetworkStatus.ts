// Original file: proto/runtime/v1/api.proto

import type { PodIP as _runtime_v1_PodIP, PodIP__Output as _runtime_v1_PodIP__Output } from '../../runtime/v1/PodIP';

export interface PodSandboxNetworkStatus {
  'ip'?: (string);
  'additional_ips'?: (_runtime_v1_PodIP)[];
}

export interface PodSandboxNetworkStatus__Output {
  'ip': (string);
  'additional_ips': (_runtime_v1_PodIP__Output)[];
}
