// Original file: proto/runtime/v1/api.proto


export interface RestoredContainer {
  'name'?: (string);
  'container_id'?: (string);
}

export interface RestoredContainer__Output {
  'name': (string);
  'container_id': (string);
}
