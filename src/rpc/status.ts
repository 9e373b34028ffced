import { VERSION } from '../config';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { EngineSnapshot } from '../docker/engine-info';
import { RUNTIME_FEATURES, runtimeHandlers } from '../cri/runtime-features';

/** Docker answers, and no call that a working dockerd answers at once is hanging. */
function runtimeReady(engine: EngineSnapshot): { type: string; status: boolean; reason: string; message: string } {
  if (!engine.reachable)
    return {
      type: 'RuntimeReady',
      status: false,
      reason: 'DockerDaemonNotReady',
      message: `docker is unreachable: ${engine.error ?? 'unknown error'}`,
    };
  if (engine.unresponsive)
    return { type: 'RuntimeReady', status: false, reason: 'DockerDaemonNotResponding', message: engine.unresponsive };
  return { type: 'RuntimeReady', status: true, reason: '', message: '' };
}

/** Served from cached state: the kubelet polls Status every few seconds. */
export function status(deps: ServiceDeps) {
  return async (req: RuntimeReq<'Status'>, _ctx: CallContext): Promise<RuntimeRes<'Status'>> => {
    const engine = deps.engine.current();
    const net = deps.network.status();
    const conditions = [
      runtimeReady(engine),
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
