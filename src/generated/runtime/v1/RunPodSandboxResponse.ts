// Original file: proto/runtime/v1/api.proto


export interface RunPodSandboxResponse {
  'pod_sandbox_id'?: (string);
}

export interface RunPodSandboxResponse__Output {
  'pod_sandbox_id': (string);
}
