// Original file: proto/runtime/v1/api.proto


export interface NetworkConfig {
  'pod_cidr'?: (string);
}

export interface NetworkConfig__Output {
  'pod_cidr': (string);
}
