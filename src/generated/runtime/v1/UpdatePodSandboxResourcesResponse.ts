// Original file: proto/runtime/v1/api.proto


export interface UpdatePodSandboxResourcesResponse {
}

export interface UpdatePodSandboxResourcesResponse__Output {
}
