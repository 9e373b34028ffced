import type { ImageImpl, RuntimeImpl } from '../server/rpc';
import type { HugetlbCgroup } from '../cgroups/hugetlb';
import type { ServiceDeps } from '../service-deps';
import { createContainer } from './create-container';
import { reopenContainerLog } from './reopen-container-log';
import { removeContainer, removeContainerFully } from './remove-container';
import { startContainer } from './start-container';
import { stopContainer } from './stop-container';
import { listContainersRpc } from './list-containers';
import type { LogManager } from '../logs/log-manager';
import type { StreamingServer } from '../streaming/server';
import { createEventHub, type EventHub } from '../events/hub';
import { getContainerEvents } from './get-container-events';
import { execRpc } from './exec';
import { execSync } from './exec-sync';
import { attachRpc } from './attach';
import { portForwardRpc } from './port-forward';
import type { ExecDeps } from '../service-deps';
import { imageHandlers } from './image-service';
import { containerStatus } from './container-status';
import { runningFactsCache } from '../container/running-facts';
import { updateContainerResources } from './update-container-resources';
import { checkpointContainer } from './checkpoint-container';
import { checkpointPod } from './checkpoint-pod';
import { restorePod } from './restore-pod';
import { runtimeConfig } from './runtime-config';
import { updateRuntimeConfig } from './update-runtime-config';
import { updatePodSandboxResources } from './update-pod-sandbox-resources';
import { status } from './status';
import { version } from './version';
import { listPodSandbox } from './list-pod-sandbox';
import { removePodSandbox } from './remove-pod-sandbox';
import { runPodSandbox } from './run-pod-sandbox';
import { podSandboxStatus } from './pod-sandbox-status';
import { stopPodSandbox } from './stop-pod-sandbox';
import { containerStats } from './container-stats';
import { listContainerStats } from './list-container-stats';
import { streamContainerStats } from './stream-container-stats';
import { podSandboxStats } from './pod-sandbox-stats';
import { listPodSandboxStats } from './list-pod-sandbox-stats';
import { streamPodSandboxStats } from './stream-pod-sandbox-stats';
import { listMetricDescriptors } from './list-metric-descriptors';
import { listPodSandboxMetrics } from './list-pod-sandbox-metrics';
import { streamPodSandboxMetrics } from './stream-pod-sandbox-metrics';
import { createStatsViews, type StatsViews } from '../container/stats-views';
import { streamContainers } from './stream-containers';
import { streamPodSandboxes } from './stream-pod-sandboxes';
import { createImageNames } from '../images/image-names';

/**
 * The CRI services over Docker: composes one handler module per RPC group.
 * Every method left out answers UNIMPLEMENTED (see server/grpc-server.ts).
 */
export function createDockerService(
  deps: ServiceDeps,
  logs: LogManager,
  streaming: StreamingServer,
  /** The daemon's one hugetlb cgroup writer (its "no controller" warning is given once). */
  hugetlb: HugetlbCgroup,
): { runtime: RuntimeImpl; image: ImageImpl; events: EventHub } {
  const events = createEventHub(deps);
  const running = runningFactsCache(hugetlb);
  const runtime: RuntimeImpl = {
    Version: version(deps),
    Status: status(deps),
    RunPodSandbox: runPodSandbox(deps),
    StopPodSandbox: stopPodSandbox(deps),
    RemovePodSandbox: removePodSandbox(deps, (id) => removeContainerFully(deps, logs, id)),
    PodSandboxStatus: podSandboxStatus(deps),
    ListPodSandbox: listPodSandbox(deps),
    CreateContainer: createContainer(deps),
    StartContainer: startContainer(deps, logs, running.hugetlb),
    StopContainer: stopContainer(deps),
    RemoveContainer: removeContainer(deps, logs),
    ListContainers: listContainersRpc(deps),
    ContainerStatus: containerStatus(deps, running, createImageNames(deps.docker), logs),
    UpdateContainerResources: updateContainerResources(deps, running.hugetlb),
    ReopenContainerLog: reopenContainerLog(deps, logs),
    ...execHandlers({
      docker: deps.docker,
      streaming,
      logger: deps.logger,
      state: deps.state,
      execExits: deps.execExits,
    }),
    ...statsHandlers(createStatsViews(deps)),
    StreamPodSandboxes: streamPodSandboxes(deps),
    StreamContainers: streamContainers(deps),
    GetContainerEvents: getContainerEvents(events),
    UpdateRuntimeConfig: updateRuntimeConfig(deps),
    RuntimeConfig: runtimeConfig(deps),
    UpdatePodSandboxResources: updatePodSandboxResources(deps, running.hugetlb),
    CheckpointContainer: checkpointContainer,
    CheckpointPod: checkpointPod,
    RestorePod: restorePod,
  };
  const image: ImageImpl = imageHandlers(deps);
  return { runtime, image, events };
}

/** ExecSync, Exec, Attach and PortForward over Docker and the streaming server. */
export function execHandlers(
  deps: ExecDeps,
): Required<Pick<RuntimeImpl, 'ExecSync' | 'Exec' | 'Attach' | 'PortForward'>> {
  return {
    ExecSync: execSync(deps),
    Exec: execRpc(deps),
    Attach: attachRpc(deps),
    PortForward: portForwardRpc(deps),
  };
}

type StatsHandlers = Required<
  Pick<
    RuntimeImpl,
    | 'ContainerStats'
    | 'ListContainerStats'
    | 'StreamContainerStats'
    | 'PodSandboxStats'
    | 'ListPodSandboxStats'
    | 'StreamPodSandboxStats'
    | 'ListMetricDescriptors'
    | 'ListPodSandboxMetrics'
    | 'StreamPodSandboxMetrics'
  >
>;

/** Stats and metrics RPCs; no RPC calls Docker in the steady state (see cri/stats-views.ts). */
export function statsHandlers(views: StatsViews): StatsHandlers {
  return {
    ContainerStats: containerStats(views),
    ListContainerStats: listContainerStats(views),
    StreamContainerStats: streamContainerStats(views),
    PodSandboxStats: podSandboxStats(views),
    ListPodSandboxStats: listPodSandboxStats(views),
    StreamPodSandboxStats: streamPodSandboxStats(views),
    ListMetricDescriptors: listMetricDescriptors(views),
    ListPodSandboxMetrics: listPodSandboxMetrics(views),
    StreamPodSandboxMetrics: streamPodSandboxMetrics(views),
  };
}
