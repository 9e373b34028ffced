// Original file: proto/runtime/v1/api.proto

import type { CpuUsage as _runtime_v1_CpuUsage, CpuUsage__Output as _runtime_v1_CpuUsage__Output } from '../../runtime/v1/CpuUsage';
import type { MemoryUsage as _runtime_v1_MemoryUsage, MemoryUsage__Output as _runtime_v1_MemoryUsage__Output } from '../../runtime/v1/MemoryUsage';
import type { NetworkUsage as _runtime_v1_NetworkUsage, NetworkUsage__Output as _runtime_v1_NetworkUsage__Output } from '../../runtime/v1/NetworkUsage';
import type { ProcessUsage as _runtime_v1_ProcessUsage, ProcessUsage__Output as _runtime_v1_ProcessUsage__Output } from '../../runtime/v1/ProcessUsage';
import type { ContainerStats as _runtime_v1_ContainerStats, ContainerStats__Output as _runtime_v1_ContainerStats__Output } from '../../runtime/v1/ContainerStats';
import type { IoUsage as _runtime_v1_IoUsage, IoUsage__Output as _runtime_v1_IoUsage__Output } from '../../runtime/v1/IoUsage';

export interface LinuxPodSandboxStats {
  'cpu'?: (_runtime_v1_CpuUsage | null);
  'memory'?: (_runtime_v1_MemoryUsage | null);
  'network'?: (_runtime_v1_NetworkUsage | null);
  'process'?: (_runtime_v1_ProcessUsage | null);
  'containers'?: (_runtime_v1_ContainerStats)[];
  'io'?: (_runtime_v1_IoUsage | null);
}

export interface LinuxPodSandboxStats__Output {
  'cpu': (_runtime_v1_CpuUsage__Output | null);
  'memory': (_runtime_v1_MemoryUsage__Output | null);
  'network': (_runtime_v1_NetworkUsage__Output | null);
  'process': (_runtime_v1_ProcessUsage__Output | null);
  'containers': (_runtime_v1_ContainerStats__Output)[];
  'io': (_runtime_v1_IoUsage__Output | null);
}
