import type { ImageImpl, RuntimeImpl } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { status, version } from './runtime-info';
import { listPodSandbox } from './sandbox-list';
import { removePodSandbox } from './sandbox-remove';
import { runPodSandbox } from './sandbox-run';
import { podSandboxStatus } from './sandbox-status';
import { stopPodSandbox } from './sandbox-stop';

/**
 * The CRI services over Docker: composes one handler module per RPC group.
 * Every method left out answers UNIMPLEMENTED (see server/grpc-server.ts).
 */
export function createDockerService(deps: ServiceDeps): { runtime: RuntimeImpl; image: ImageImpl } {
  const runtime: RuntimeImpl = {
    Version: version(deps),
    Status: status(deps),
    RunPodSandbox: runPodSandbox(deps),
    StopPodSandbox: stopPodSandbox(deps),
    RemovePodSandbox: removePodSandbox(deps),
    PodSandboxStatus: podSandboxStatus(deps),
    ListPodSandbox: listPodSandbox(deps),
  };
  const image: ImageImpl = {};
  return { runtime, image };
}
