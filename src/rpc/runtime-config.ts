import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { unavailable } from '../errors';
import type { ServiceDeps } from '../service-deps';

/** RuntimeConfig: the kubelet must run with the cgroup driver Docker uses. */
export function runtimeConfig(deps: ServiceDeps) {
  return async (_req: RuntimeReq<'RuntimeConfig'>, _ctx: CallContext): Promise<RuntimeRes<'RuntimeConfig'>> => {
    let engine = deps.engine.current();
    if (!engine.cgroupDriver) engine = await deps.engine.refresh();
    // guessing cgroupfs would make a systemd-driver kubelet fail in confusing ways: say we do not know
    if (!engine.cgroupDriver) {
      const why = engine.reachable
        ? 'docker info did not report it'
        : `docker is unreachable: ${engine.error ?? 'unknown error'}`;
      throw unavailable(`RuntimeConfig: docker's cgroup driver is unknown (${why})`);
    }
    return { linux: { cgroup_driver: engine.cgroupDriver === 'systemd' ? 'SYSTEMD' : 'CGROUPFS' } };
  };
}
