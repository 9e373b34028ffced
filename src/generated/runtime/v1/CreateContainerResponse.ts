// Original file: proto/runtime/v1/api.proto


export interface CreateContainerResponse {
  'container_id'?: (string);
}

export interface CreateContainerResponse__Output {
  'container_id': (string);
}
