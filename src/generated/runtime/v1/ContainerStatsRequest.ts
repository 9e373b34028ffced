// Original file: proto/runtime/v1/api.proto


export interface ContainerStatsRequest {
  'container_id'?: (string);
}

export interface ContainerStatsRequest__Output {
  'container_id': (string);
}
