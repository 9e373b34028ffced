// Original file: proto/runtime/v1/api.proto

import type { ContainerStats as _runtime_v1_ContainerStats, ContainerStats__Output as _runtime_v1_ContainerStats__Output } from '../../runtime/v1/ContainerStats';

export interface ContainerStatsResponse {
  'stats'?: (_runtime_v1_ContainerStats | null);
}

export interface ContainerStatsResponse__Output {
  'stats': (_runtime_v1_ContainerStats__Output | null);
}
