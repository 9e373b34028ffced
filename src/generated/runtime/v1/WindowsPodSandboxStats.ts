// Original file: proto/runtime/v1/api.proto

import type { WindowsCpuUsage as _runtime_v1_WindowsCpuUsage, WindowsCpuUsage__Output as _runtime_v1_WindowsCpuUsage__Output } from '../../runtime/v1/WindowsCpuUsage';
import type { WindowsMemoryUsage as _runtime_v1_WindowsMemoryUsage, WindowsMemoryUsage__Output as _runtime_v1_WindowsMemoryUsage__Output } from '../../runtime/v1/WindowsMemoryUsage';
import type { WindowsNetworkUsage as _runtime_v1_WindowsNetworkUsage, WindowsNetworkUsage__Output as _runtime_v1_WindowsNetworkUsage__Output } from '../../runtime/v1/WindowsNetworkUsage';
import type { WindowsProcessUsage as _runtime_v1_WindowsProcessUsage, WindowsProcessUsage__Output as _runtime_v1_WindowsProcessUsage__Output } from '../../runtime/v1/WindowsProcessUsage';
import type { WindowsContainerStats as _runtime_v1_WindowsContainerStats, WindowsContainerStats__Output as _runtime_v1_WindowsContainerStats__Output } from '../../runtime/v1/WindowsContainerStats';

export interface WindowsPodSandboxStats {
  'cpu'?: (_runtime_v1_WindowsCpuUsage | null);
  'memory'?: (_runtime_v1_WindowsMemoryUsage | null);
  'network'?: (_runtime_v1_WindowsNetworkUsage | null);
  'process'?: (_runtime_v1_WindowsProcessUsage | null);
  'containers'?: (_runtime_v1_WindowsContainerStats)[];
}

export interface WindowsPodSandboxStats__Output {
  'cpu': (_runtime_v1_WindowsCpuUsage__Output | null);
  'memory': (_runtime_v1_WindowsMemoryUsage__Output | null);
  'network': (_runtime_v1_WindowsNetworkUsage__Output | null);
  'process': (_runtime_v1_WindowsProcessUsage__Output | null);
  'containers': (_runtime_v1_WindowsContainerStats__Output)[];
}
