// Original file: proto/runtime/v1/api.proto

import type { Metric as _runtime_v1_Metric, Metric__Output as _runtime_v1_Metric__Output } from '../../runtime/v1/Metric';
import type { ContainerMetrics as _runtime_v1_ContainerMetrics, ContainerMetrics__Output as _runtime_v1_ContainerMetrics__Output } from '../../runtime/v1/ContainerMetrics';

export interface PodSandboxMetrics {
  'pod_sandbox_id'?: (string);
  'metrics'?: (_runtime_v1_Metric)[];
  'container_metrics'?: (_runtime_v1_ContainerMetrics)[];
}

export interface PodSandboxMetrics__Output {
  'pod_sandbox_id': (string);
  'metrics': (_runtime_v1_Metric__Output)[];
  'container_metrics': (_runtime_v1_ContainerMetrics__Output)[];
}
