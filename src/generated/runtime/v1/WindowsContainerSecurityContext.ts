// Original file: proto/runtime/v1/api.proto


export interface WindowsContainerSecurityContext {
  'run_as_username'?: (string);
  'credential_spec'?: (string);
  'host_process'?: (boolean);
}

export interface WindowsContainerSecurityContext__Output {
  'run_as_username': (string);
  'credential_spec': (string);
  'host_process': (boolean);
}
