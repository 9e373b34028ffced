// Original file: proto/runtime/v1/api.proto

import type { NamespaceOption as _runtime_v1_NamespaceOption, NamespaceOption__Output as _runtime_v1_NamespaceOption__Output } from '../../runtime/v1/NamespaceOption';
import type { SELinuxOption as _runtime_v1_SELinuxOption, SELinuxOption__Output as _runtime_v1_SELinuxOption__Output } from '../../runtime/v1/SELinuxOption';
import type { Int64Value as _runtime_v1_Int64Value, Int64Value__Output as _runtime_v1_Int64Value__Output } from '../../runtime/v1/Int64Value';
import type { SecurityProfile as _runtime_v1_SecurityProfile, SecurityProfile__Output as _runtime_v1_SecurityProfile__Output } from '../../runtime/v1/SecurityProfile';
import type { SupplementalGroupsPolicy as _runtime_v1_SupplementalGroupsPolicy, SupplementalGroupsPolicy__Output as _runtime_v1_SupplementalGroupsPolicy__Output } from '../../runtime/v1/SupplementalGroupsPolicy';
import type { Long } from '@grpc/proto-loader';

export interface LinuxSandboxSecurityContext {
  'namespace_options'?: (_runtime_v1_NamespaceOption | null);
  'selinux_options'?: (_runtime_v1_SELinuxOption | null);
  'run_as_user'?: (_runtime_v1_Int64Value | null);
  'readonly_rootfs'?: (boolean);
  'supplemental_groups'?: (number | string | Long)[];
  'privileged'?: (boolean);
  'seccomp_profile_path'?: (string);
  'run_as_group'?: (_runtime_v1_Int64Value | null);
  'seccomp'?: (_runtime_v1_SecurityProfile | null);
  'apparmor'?: (_runtime_v1_SecurityProfile | null);
  'supplemental_groups_policy'?: (_runtime_v1_SupplementalGroupsPolicy);
}

export interface LinuxSandboxSecurityContext__Output {
  'namespace_options': (_runtime_v1_NamespaceOption__Output | null);
  'selinux_options': (_runtime_v1_SELinuxOption__Output | null);
  'run_as_user': (_runtime_v1_Int64Value__Output | null);
  'readonly_rootfs': (boolean);
  'supplemental_groups': (string)[];
  'privileged': (boolean);
  'seccomp_profile_path': (string);
  'run_as_group': (_runtime_v1_Int64Value__Output | null);
  'seccomp': (_runtime_v1_SecurityProfile__Output | null);
  'apparmor': (_runtime_v1_SecurityProfile__Output | null);
  'supplemental_groups_policy': (_runtime_v1_SupplementalGroupsPolicy__Output);
}
