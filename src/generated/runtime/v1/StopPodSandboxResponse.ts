// Original file: proto/runtime/v1/api.proto


export interface StopPodSandboxResponse {
}

export interface StopPodSandboxResponse__Output {
}
