// Original file: proto/runtime/v1/api.proto

import type { PodSandboxMetrics as _runtime_v1_PodSandboxMetrics, PodSandboxMetrics__Output as _runtime_v1_PodSandboxMetrics__Output } from '../../runtime/v1/PodSandboxMetrics';

export interface StreamPodSandboxMetricsResponse {
  'pod_sandbox_metrics'?: (_runtime_v1_PodSandboxMetrics)[];
}

export interface StreamPodSandboxMetricsResponse__Output {
  'pod_sandbox_metrics': (_runtime_v1_PodSandboxMetrics__Output)[];
}
