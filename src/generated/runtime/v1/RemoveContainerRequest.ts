// Original file: proto/runtime/v1/api.proto


export interface RemoveContainerRequest {
  'container_id'?: (string);
}

export interface RemoveContainerRequest__Output {
  'container_id': (string);
}
