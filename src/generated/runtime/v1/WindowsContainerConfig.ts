// Original file: proto/runtime/v1/api.proto

import type { WindowsContainerResources as _runtime_v1_WindowsContainerResources, WindowsContainerResources__Output as _runtime_v1_WindowsContainerResources__Output } from '../../runtime/v1/WindowsContainerResources';
import type { WindowsContainerSecurityContext as _runtime_v1_WindowsContainerSecurityContext, WindowsContainerSecurityContext__Output as _runtime_v1_WindowsContainerSecurityContext__Output } from '../../runtime/v1/WindowsContainerSecurityContext';

export interface WindowsContainerConfig {
  'resources'?: (_runtime_v1_WindowsContainerResources | null);
  'security_context'?: (_runtime_v1_WindowsContainerSecurityContext | null);
}

export interface WindowsContainerConfig__Output {
  'resources': (_runtime_v1_WindowsContainerResources__Output | null);
  'security_context': (_runtime_v1_WindowsContainerSecurityContext__Output | null);
}
