import { VERSION } from '../config';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { RUNTIME_FEATURES, runtimeHandlers } from '../cri/runtime-features';

/** Served from cached state: the kubelet polls Status every few seconds. */
export function status(deps: ServiceDeps) {
  return async (req: RuntimeReq<'Status'>, _ctx: CallContext): Promise<RuntimeRes<'Status'>> => {
    const engine = deps.engine.current();
    const net = deps.network.status();
    const conditions = [
      {
        type: 'RuntimeReady',
        status: engine.reachable,
        reason: engine.reachable ? '' : 'DockerDaemonNotReady',
        message: engine.reachable ? '' : `docker is unreachable: ${engine.error ?? 'unknown error'}`,
      },
      {
        type: 'NetworkReady',
        status: net.ready,
        reason: net.ready ? '' : net.reason,
        message: net.ready ? '' : net.message,
      },
    ];
    const info: Record<string, string> = {};
    if (req.verbose) {
      info.config = JSON.stringify({
        crishimVersion: VERSION,
        networkPlugin: deps.config.networkPlugin,
        cniConfDir: deps.config.cniConfDir,
        cniBinDirs: deps.config.cniBinDirs,
        cniConfig: net.configName ?? null,
        cniConfigFile: net.configFile ?? null,
        podInfraContainerImage: deps.config.podInfraContainerImage,
        rootDirectory: deps.config.rootDirectory,
        dockerVersion: engine.version ?? null,
        dockerApiVersion: engine.apiVersion ?? null,
        cgroupDriver: engine.cgroupDriver ?? null,
        sandboxOomScoreAdj: deps.sandboxOomScoreAdj,
      });
    }
    return { status: { conditions }, info, runtime_handlers: runtimeHandlers(engine), features: RUNTIME_FEATURES };
  };
}
