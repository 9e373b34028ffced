import type { ImageImpl, RuntimeImpl } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { createContainer } from './container-create';
import { reopenContainerLog, removeContainer, removeContainerFully, startContainer, stopContainer } from './container-lifecycle';
import { listContainersRpc } from './container-list';
import type { LogManager } from './container-logs';
import type { StreamingServer } from '../streaming/server';
import { createEventHub, getContainerEvents, type EventHub } from './container-events';
import { execHandlers } from './exec';
import { imageHandlers } from './image-service';
import { containerStatus } from './container-status';
import { updateContainerResources } from './container-update';
import { checkpointUnsupported, runtimeConfig, updatePodSandboxResources, updateRuntimeConfig } from './runtime-config';
import { status, version } from './runtime-info';
import { listPodSandbox } from './sandbox-list';
import { removePodSandbox } from './sandbox-remove';
import { runPodSandbox } from './sandbox-run';
import { podSandboxStatus } from './sandbox-status';
import { stopPodSandbox } from './sandbox-stop';
import { statsHandlers } from './stats-handlers';
import { streamContainers, streamPodSandboxes } from './stream-lists';

/**
 * The CRI services over Docker: composes one handler module per RPC group.
 * Every method left out answers UNIMPLEMENTED (see server/grpc-server.ts).
 */
export function createDockerService(
  deps: ServiceDeps,
  logs: LogManager,
  streaming: StreamingServer,
): { runtime: RuntimeImpl; image: ImageImpl; events: EventHub } {
  const events = createEventHub(deps);
  const runtime: RuntimeImpl = {
    Version: version(deps),
    Status: status(deps),
    RunPodSandbox: runPodSandbox(deps),
    StopPodSandbox: stopPodSandbox(deps),
    RemovePodSandbox: removePodSandbox(deps, (id) => removeContainerFully(deps, logs, id)),
    PodSandboxStatus: podSandboxStatus(deps),
    ListPodSandbox: listPodSandbox(deps),
    CreateContainer: createContainer(deps),
    StartContainer: startContainer(deps, logs),
    StopContainer: stopContainer(deps),
    RemoveContainer: removeContainer(deps, logs),
    ListContainers: listContainersRpc(deps),
    ContainerStatus: containerStatus(deps, undefined, logs),
    UpdateContainerResources: updateContainerResources(deps),
    ReopenContainerLog: reopenContainerLog(deps, logs),
    ...execHandlers({ docker: deps.docker, streaming, logger: deps.logger }),
    ...statsHandlers(deps),
    StreamPodSandboxes: streamPodSandboxes(deps),
    StreamContainers: streamContainers(deps),
    GetContainerEvents: getContainerEvents(events),
    UpdateRuntimeConfig: updateRuntimeConfig(deps),
    RuntimeConfig: runtimeConfig(deps),
    UpdatePodSandboxResources: updatePodSandboxResources(deps),
    CheckpointContainer: checkpointUnsupported('CheckpointContainer'),
    CheckpointPod: checkpointUnsupported('CheckpointPod'),
    RestorePod: checkpointUnsupported('RestorePod'),
  };
  const image: ImageImpl = imageHandlers(deps);
  return { runtime, image, events };
}
