// Original file: proto/runtime/v1/api.proto


export interface CheckpointPodRequest {
  'pod_sandbox_id'?: (string);
  'output_path'?: (string);
  'container_ids'?: (string)[];
  'options'?: ({[key: string]: string});
}

export interface CheckpointPodRequest__Output {
  'pod_sandbox_id': (string);
  'output_path': (string);
  'container_ids': (string)[];
  'options': ({[key: string]: string});
}
