import { CRI_VERSION } from '../config';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { unavailable } from '../errors';
import type { ServiceDeps } from '../service-deps';

/** runtime_name stays `docker`: the kubelet and tooling key Docker-specific behaviour on it. */
export const RUNTIME_NAME = 'docker';

export function version(deps: ServiceDeps) {
  return async (_req: RuntimeReq<'Version'>, _ctx: CallContext): Promise<RuntimeRes<'Version'>> => {
    let engine = deps.engine.current();
    if (!engine.version) engine = await deps.engine.refresh();
    if (!engine.version) throw unavailable(`docker is unreachable: ${engine.error ?? 'unknown error'}`);
    return {
      // the kubelet's runtime API version string, a constant every CRI runtime answers
      version: '0.1.0',
      runtime_name: RUNTIME_NAME,
      runtime_version: engine.version,
      runtime_api_version: CRI_VERSION,
    };
  };
}
