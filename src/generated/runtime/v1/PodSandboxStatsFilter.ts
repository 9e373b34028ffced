// Original file: proto/runtime/v1/api.proto


export interface PodSandboxStatsFilter {
  'id'?: (string);
  'label_selector'?: ({[key: string]: string});
}

export interface PodSandboxStatsFilter__Output {
  'id': (string);
  'label_selector': ({[key: string]: string});
}
