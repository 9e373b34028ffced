// Original file: proto/runtime/v1/api.proto


export interface VersionResponse {
  'version'?: (string);
  'runtime_name'?: (string);
  'runtime_version'?: (string);
  'runtime_api_version'?: (string);
}

export interface VersionResponse__Output {
  'version': (string);
  'runtime_name': (string);
  'runtime_version': (string);
  'runtime_api_version': (string);
}
