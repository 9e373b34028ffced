import * as path from 'path';
import type * as Docker from '../docker/types';
import { invalidArgument, unimplemented } from '../errors';
import type { RuntimeReq } from '../server/rpc';
import { apiAtLeast } from '../docker/capabilities';

/**
 * CRI v1 request fields Docker cannot honour, refused by name instead of dropped
 * (the kubelet decides from the Status features whether to send most of them;
 * a runtime that ignores one would run the pod with weaker isolation than asked).
 * docs/kubernetes.md's "CRI field audit" table lists every field and what becomes of it.
 */

type SandboxConfig = NonNullable<RuntimeReq<'RunPodSandbox'>['config']>;
type ContainerConfig = NonNullable<RuntimeReq<'CreateContainer'>['config']>;
type Mount = ContainerConfig['mounts'][number];
type NamespaceOption = NonNullable<
  NonNullable<NonNullable<ContainerConfig['linux']>['security_context']>['namespace_options']
>;

/** Docker API that added ReadOnlyForceRecursive bind mounts (Docker 25). */
export const RECURSIVE_READ_ONLY_API = '1.44';
/** Docker API that added the `image` mount type with its Subpath (Docker 28). */
export const IMAGE_MOUNT_API = '1.48';

function checkUserNamespace(field: string, ns: NamespaceOption | null | undefined): void {
  const userns = ns?.userns_options;
  if (!userns) return;
  if (userns.mode !== 'NODE') {
    throw unimplemented(
      `${field}.userns_options mode ${userns.mode}: user namespaces per pod are not supported (Docker only has a daemon-wide userns-remap); run the pod with hostUsers: true`,
    );
  }
  if ((userns.uids ?? []).length || (userns.gids ?? []).length) {
    throw invalidArgument(`${field}.userns_options: uids/gids mappings need mode POD, got mode NODE`);
  }
}

function checkGroupsPolicy(field: string, policy: string | undefined): void {
  if (policy === 'Strict') {
    throw unimplemented(
      `${field}.supplemental_groups_policy Strict is not supported: Docker always adds the groups the image's /etc/group gives the user (Merge)`,
    );
  }
}

/** RunPodSandbox fields crishim cannot honour. */
export function auditSandboxConfig(config: SandboxConfig): void {
  const sec = config.linux?.security_context;
  checkUserNamespace('config.linux.security_context.namespace_options', sec?.namespace_options);
  checkGroupsPolicy('config.linux.security_context', sec?.supplemental_groups_policy);
  if (config.windows) throw invalidArgument('config.windows is for Windows hosts; this runtime runs Linux pods');
}

function checkMount(m: Mount, i: number, apiVersion: string | undefined): void {
  const field = `config.mounts[${i}]`;
  if ((m.uidMappings ?? []).length || (m.gidMappings ?? []).length) {
    throw unimplemented(
      `${field}.uidMappings/gidMappings: ID-mapped mounts need user namespaces, which Docker does not give per pod`,
    );
  }
  if ((m.mount_options ?? []).length) {
    throw unimplemented(
      `${field}.mount_options ${JSON.stringify(m.mount_options)}: Docker bind mounts take no free-form mount options`,
    );
  }
  if (m.recursive_read_only) {
    if (!m.readonly) throw invalidArgument(`${field}.recursive_read_only needs readonly`);
    if (m.propagation && m.propagation !== 'PROPAGATION_PRIVATE') {
      throw invalidArgument(`${field}.recursive_read_only needs propagation PROPAGATION_PRIVATE, got ${m.propagation}`);
    }
    if (!apiAtLeast(apiVersion, RECURSIVE_READ_ONLY_API)) {
      throw unimplemented(
        `${field}.recursive_read_only: this Docker (API ${apiVersion ?? 'unknown'}) has no recursive read-only bind mounts (API ${RECURSIVE_READ_ONLY_API}, Docker 25, added them)`,
      );
    }
  }
  const image = m.image?.image;
  if (image) {
    if (m.host_path) throw invalidArgument(`${field}: host_path and image are exclusive`);
    if (!apiAtLeast(apiVersion, IMAGE_MOUNT_API)) {
      throw unimplemented(
        `${field}.image: this Docker (API ${apiVersion ?? 'unknown'}) has no image mounts (API ${IMAGE_MOUNT_API}, Docker 28, added them)`,
      );
    }
  } else if (m.image_sub_path) {
    throw invalidArgument(`${field}.image_sub_path needs image`);
  }
}

/** CreateContainer fields crishim cannot honour on this engine. */
export function auditContainerConfig(config: ContainerConfig, apiVersion: string | undefined): void {
  const sec = config.linux?.security_context;
  (config.mounts ?? []).forEach((m, i) => checkMount(m, i, apiVersion));
  checkUserNamespace('config.linux.security_context.namespace_options', sec?.namespace_options);
  checkGroupsPolicy('config.linux.security_context', sec?.supplemental_groups_policy);
  if ((sec?.capabilities?.add_ambient_capabilities ?? []).length) {
    throw unimplemented(
      `config.linux.security_context.capabilities.add_ambient_capabilities ${JSON.stringify(sec!.capabilities!.add_ambient_capabilities)}: Docker cannot set ambient capabilities`,
    );
  }
  if ((config.CDI_devices ?? []).length) {
    throw unimplemented(
      `config.CDI_devices ${JSON.stringify(config.CDI_devices.map((d) => d.name))}: CDI devices are not supported; use config.devices`,
    );
  }
  if (config.windows) throw invalidArgument('config.windows is for Windows hosts; this runtime runs Linux containers');
}

/** True when a mount must go through Docker's Mounts API rather than a `host:ctr:opts` bind string. */
export function needsMountApi(m: Mount): boolean {
  return Boolean(m.recursive_read_only || m.image?.image);
}

const BIND_PROPAGATION: Record<string, 'rslave' | 'rshared' | undefined> = {
  PROPAGATION_HOST_TO_CONTAINER: 'rslave',
  PROPAGATION_BIDIRECTIONAL: 'rshared',
};

/**
 * Docker Mounts for the mounts a bind string cannot express (already audited):
 * recursive read-only binds and image volumes.
 */
export function dockerMounts(mounts: Mount[]): Docker.MountConfig {
  const out: Docker.MountConfig = [];
  for (const m of mounts) {
    if (!needsMountApi(m)) continue;
    if (m.image?.image) {
      out.push({
        Type: 'image' as Docker.MountType,
        Source: m.image.image,
        Target: m.container_path,
        ReadOnly: true,
        ...(m.image_sub_path ? { ImageOptions: { Subpath: m.image_sub_path } } : {}),
      } as Docker.MountSettings);
    } else {
      out.push({
        Type: 'bind',
        Source: path.resolve(m.host_path),
        Target: m.container_path,
        ReadOnly: true,
        BindOptions: { Propagation: BIND_PROPAGATION[m.propagation] ?? 'rprivate', ReadOnlyForceRecursive: true },
      } as Docker.MountSettings);
    }
  }
  return out;
}
