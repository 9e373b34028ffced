// Original file: proto/runtime/v1/api.proto


export interface RemovePodSandboxRequest {
  'pod_sandbox_id'?: (string);
}

export interface RemovePodSandboxRequest__Output {
  'pod_sandbox_id': (string);
}
