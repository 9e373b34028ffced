// Original file: proto/runtime/v1/api.proto

import type { MetricDescriptor as _runtime_v1_MetricDescriptor, MetricDescriptor__Output as _runtime_v1_MetricDescriptor__Output } from '../../runtime/v1/MetricDescriptor';

export interface ListMetricDescriptorsResponse {
  'descriptors'?: (_runtime_v1_MetricDescriptor)[];
}

export interface ListMetricDescriptorsResponse__Output {
  'descriptors': (_runtime_v1_MetricDescriptor__Output)[];
}
