// Original file: proto/runtime/v1/api.proto


export interface ReopenContainerLogRequest {
  'container_id'?: (string);
}

export interface ReopenContainerLogRequest__Output {
  'container_id': (string);
}
