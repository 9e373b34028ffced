// Original file: proto/runtime/v1/api.proto

import type { MountPropagation as _runtime_v1_MountPropagation, MountPropagation__Output as _runtime_v1_MountPropagation__Output } from '../../runtime/v1/MountPropagation';
import type { IDMapping as _runtime_v1_IDMapping, IDMapping__Output as _runtime_v1_IDMapping__Output } from '../../runtime/v1/IDMapping';
import type { ImageSpec as _runtime_v1_ImageSpec, ImageSpec__Output as _runtime_v1_ImageSpec__Output } from '../../runtime/v1/ImageSpec';

export interface Mount {
  'container_path'?: (string);
  'host_path'?: (string);
  'readonly'?: (boolean);
  'selinux_relabel'?: (boolean);
  'propagation'?: (_runtime_v1_MountPropagation);
  'uidMappings'?: (_runtime_v1_IDMapping)[];
  'gidMappings'?: (_runtime_v1_IDMapping)[];
  'recursive_read_only'?: (boolean);
  'image'?: (_runtime_v1_ImageSpec | null);
  'image_sub_path'?: (string);
  'mount_options'?: (string)[];
}

export interface Mount__Output {
  'container_path': (string);
  'host_path': (string);
  'readonly': (boolean);
  'selinux_relabel': (boolean);
  'propagation': (_runtime_v1_MountPropagation__Output);
  'uidMappings': (_runtime_v1_IDMapping__Output)[];
  'gidMappings': (_runtime_v1_IDMapping__Output)[];
  'recursive_read_only': (boolean);
  'image': (_runtime_v1_ImageSpec__Output | null);
  'image_sub_path': (string);
  'mount_options': (string)[];
}
