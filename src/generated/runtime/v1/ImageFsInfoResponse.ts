// Original file: proto/runtime/v1/api.proto

import type { FilesystemUsage as _runtime_v1_FilesystemUsage, FilesystemUsage__Output as _runtime_v1_FilesystemUsage__Output } from '../../runtime/v1/FilesystemUsage';

export interface ImageFsInfoResponse {
  'image_filesystems'?: (_runtime_v1_FilesystemUsage)[];
  'container_filesystems'?: (_runtime_v1_FilesystemUsage)[];
}

export interface ImageFsInfoResponse__Output {
  'image_filesystems': (_runtime_v1_FilesystemUsage__Output)[];
  'container_filesystems': (_runtime_v1_FilesystemUsage__Output)[];
}
