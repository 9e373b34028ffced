// Original file: proto/runtime/v1/api.proto

import type { UInt64Value as _runtime_v1_UInt64Value, UInt64Value__Output as _runtime_v1_UInt64Value__Output } from '../../runtime/v1/UInt64Value';
import type { PsiStats as _runtime_v1_PsiStats, PsiStats__Output as _runtime_v1_PsiStats__Output } from '../../runtime/v1/PsiStats';
import type { Long } from '@grpc/proto-loader';

export interface MemoryUsage {
  'timestamp'?: (number | string | Long);
  'working_set_bytes'?: (_runtime_v1_UInt64Value | null);
  'available_bytes'?: (_runtime_v1_UInt64Value | null);
  'usage_bytes'?: (_runtime_v1_UInt64Value | null);
  'rss_bytes'?: (_runtime_v1_UInt64Value | null);
  'page_faults'?: (_runtime_v1_UInt64Value | null);
  'major_page_faults'?: (_runtime_v1_UInt64Value | null);
  'psi'?: (_runtime_v1_PsiStats | null);
}

export interface MemoryUsage__Output {
  'timestamp': (string);
  'working_set_bytes': (_runtime_v1_UInt64Value__Output | null);
  'available_bytes': (_runtime_v1_UInt64Value__Output | null);
  'usage_bytes': (_runtime_v1_UInt64Value__Output | null);
  'rss_bytes': (_runtime_v1_UInt64Value__Output | null);
  'page_faults': (_runtime_v1_UInt64Value__Output | null);
  'major_page_faults': (_runtime_v1_UInt64Value__Output | null);
  'psi': (_runtime_v1_PsiStats__Output | null);
}
