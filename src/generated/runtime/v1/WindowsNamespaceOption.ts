// Original file: proto/runtime/v1/api.proto

import type { NamespaceMode as _runtime_v1_NamespaceMode, NamespaceMode__Output as _runtime_v1_NamespaceMode__Output } from '../../runtime/v1/NamespaceMode';

export interface WindowsNamespaceOption {
  'network'?: (_runtime_v1_NamespaceMode);
}

export interface WindowsNamespaceOption__Output {
  'network': (_runtime_v1_NamespaceMode__Output);
}
