import type { EngineSnapshot } from '../docker/engine-info';
import { apiAtLeast } from '../docker/capabilities';
import type { RuntimeRes } from '../server/rpc';
import { RECURSIVE_READ_ONLY_API } from './field-audit';

/**
 * What Status declares the runtime can do. The kubelet decides from these whether
 * to send recursive read-only mounts, user-namespaced pods and the Strict
 * supplemental groups policy, so each says exactly what CreateContainer honours.
 */

type StatusRes = RuntimeRes<'Status'>;

/** One entry for the default handler ("") and one per Docker runtime (the runtime handlers crishim accepts). */
export function runtimeHandlers(engine: EngineSnapshot): NonNullable<StatusRes['runtime_handlers']> {
  const features = {
    // ReadOnlyForceRecursive bind mounts arrived with Docker API 1.44
    recursive_read_only_mounts: apiAtLeast(engine.apiVersion, RECURSIVE_READ_ONLY_API),
    // Docker has only a daemon-wide userns-remap, never a namespace per pod
    user_namespaces: false,
  };
  return ['', ...engine.runtimes].map((name) => ({ name, features }));
}

export const RUNTIME_FEATURES: NonNullable<StatusRes['features']> = {
  // Docker always merges the image's group memberships: Strict cannot be honoured
  supplemental_groups_policy: false,
  user_namespaces_host_network: false,
  // Mount.mount_options are refused: Docker binds take no free-form options
  mount_options: false,
};
