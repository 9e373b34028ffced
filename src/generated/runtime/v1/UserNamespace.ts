// Original file: proto/runtime/v1/api.proto

import type { NamespaceMode as _runtime_v1_NamespaceMode, NamespaceMode__Output as _runtime_v1_NamespaceMode__Output } from '../../runtime/v1/NamespaceMode';
import type { IDMapping as _runtime_v1_IDMapping, IDMapping__Output as _runtime_v1_IDMapping__Output } from '../../runtime/v1/IDMapping';

export interface UserNamespace {
  'mode'?: (_runtime_v1_NamespaceMode);
  'uids'?: (_runtime_v1_IDMapping)[];
  'gids'?: (_runtime_v1_IDMapping)[];
}

export interface UserNamespace__Output {
  'mode': (_runtime_v1_NamespaceMode__Output);
  'uids': (_runtime_v1_IDMapping__Output)[];
  'gids': (_runtime_v1_IDMapping__Output)[];
}
