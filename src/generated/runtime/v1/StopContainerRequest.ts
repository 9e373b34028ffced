// Original file: proto/runtime/v1/api.proto

import type { Long } from '@grpc/proto-loader';

export interface StopContainerRequest {
  'container_id'?: (string);
  'timeout'?: (number | string | Long);
}

export interface StopContainerRequest__Output {
  'container_id': (string);
  'timeout': (string);
}
