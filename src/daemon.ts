import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Config } from './config';
import { createCheckpointStore } from './checkpoint/store';
import { hugetlbCgroup } from './cgroups/hugetlb';
import { crashPointsFromEnv } from './crash-points';
import { createLogManager } from './logs/log-manager';
import { createLogPositionStore } from './logs/log-positions';
import { createDockerService } from './rpc/runtime-service';
import { CONTAINER_LOGPATH_LABEL, ROOT_LABEL, TYPE_CONTAINER, TYPE_LABEL } from './labels';
import type { ServiceDeps } from './service-deps';
import { dockerOptions } from './docker/client';
import { connectEngine } from './docker/connect';
import { instrumentEngine } from './docker/instrumented-engine';
import { createStallWatch } from './docker/stall-watch';
import { createEngineInfo, refreshOnDaemonEvents } from './docker/engine-info';
import { lowestOomScoreAdj } from './docker/oom-score';
import { detectCapabilityGrant } from './docker/capabilities';
import { describeGrant } from './cri/privileged';
import type { Logger } from './logging/logger';
import { createNetworkPlugin } from './network/plugin-manager';
import { startCriServer } from './server/grpc-server';
import { startStreamingServer } from './streaming/server';
import type { Metrics } from './server/metrics';
import { listContainers } from './container/list';
import { listSandboxes } from './sandbox/list';
import { reconcile, startNetworkJanitor } from './recovery/reconcile';
import { nowNanos } from './time';
import { createStateStore } from './state/store';
import { ExecExits } from './docker/exec-exits';
import { observeMutations } from './state/mutations';
import { mustFindContainer } from './container/lookup';

/** dockershim's value for pause containers: the pod's last process to be OOM-killed. */
export const SANDBOX_OOM_SCORE_ADJ = -998;

export interface Daemon {
  readonly socketPath: string;
  readonly deps: ServiceDeps;
  close(): Promise<void>;
}

/** Wires config -> Docker, network, checkpoints, handlers -> gRPC server. */
export async function startDaemon(config: Config, logger: Logger): Promise<Daemon> {
  // objects created before this instant cannot belong to a RunPodSandbox this process is serving
  const startedAt = BigInt(nowNanos());
  await fsp.mkdir(config.rootDirectory, { recursive: true, mode: 0o700 });
  const client = await connectEngine(
    {
      endpoint: config.dockerEndpoint,
      tlsCa: config.dockerTlsCa,
      tlsCert: config.dockerTlsCert,
      tlsKey: config.dockerTlsKey,
    },
    logger,
  );
  // prom-client and its default collectors' timers are loaded only on nodes that serve /metrics
  const metricsModule = config.metricsBindAddress ? await import('./server/metrics') : undefined;
  const metrics: Metrics | undefined = metricsModule?.createMetrics();
  const stalls = createStallWatch({ timeoutMs: config.dockerStallTimeoutSeconds * 1000, logger });
  const instrumented = instrumentEngine(client.engine, logger, {
    onRequest: (method, route, seconds, err) => metrics?.observeDocker(method, route, seconds, !err),
    // Status must say RuntimeReady=false as soon as a call finds Docker gone
    onUnreachable: (err) => engine.markUnreachable(err.message),
    stalls,
  });
  const engine = createEngineInfo(instrumented, logger, { stalls });
  metrics?.setDockerWait(() => stalls.oldestWaitMs());
  await engine.refresh();

  // probed once: runc fails every container whose oom_score_adj the kernel refuses
  const floor = await lowestOomScoreAdj(-1000);
  const oom = Math.max(SANDBOX_OOM_SCORE_ADJ, floor);
  if (oom !== SANDBOX_OOM_SCORE_ADJ) {
    logger.warn(
      `this host refuses oom_score_adj ${SANDBOX_OOM_SCORE_ADJ}; pause containers get ${oom} and lower container values are raised to it`,
      {
        lowestAllowed: floor,
      },
    );
  }

  // probed once: Docker's Privileged fails every container where dockerd lacks a capability
  const capabilities = await detectCapabilityGrant(
    engine.current().apiVersion ?? client.apiVersion,
    // a tcp endpoint has no socket path: a remote dockerd's bounding set is unknown
    dockerOptions({
      endpoint: config.dockerEndpoint,
      tlsCa: config.dockerTlsCa,
      tlsCert: config.dockerTlsCert,
      tlsKey: config.dockerTlsKey,
    }).socketPath,
  );
  const grantLine = describeGrant(capabilities);
  if (capabilities.dockerPrivilegedWorks) logger.info(grantLine.message, grantLine.meta);
  else logger.warn(grantLine.message, grantLine.meta);

  // read once here: the recovery tests name the point where the daemon kills itself
  const crashAt = crashPointsFromEnv(process.env);
  const checkpoints = await createCheckpointStore(path.join(config.rootDirectory, 'sandbox'), logger);
  const plugin = createNetworkPlugin({
    plugin: config.networkPlugin,
    confDir: config.cniConfDir,
    binDirs: config.cniBinDirs,
    cacheDir: config.cniCacheDir,
    execDir: path.join(config.rootDirectory, 'cni-exec'),
    execTimeoutMs: config.cniExecTimeoutSeconds * 1000,
    logger,
    midNetworkHook: () => crashAt('sandbox:mid-network'),
  });
  const network = metricsModule && metrics ? metricsModule.instrumentNetwork(plugin, metrics) : plugin;
  if (config.podCidr) network.setPodCidr(config.podCidr);

  const ownPorts = new Set<number>();
  // List and Status read this view; crishim's own Docker requests have what they touch re-inspected at once
  const execExits = new ExecExits();
  const state = createStateStore(instrumented, logger, { execExits });
  const docker = observeMutations(instrumented, {
    changing: (ref) => state.changing(ref),
    changed: (ref, brings) => state.reinspect(ref, brings),
    removed: (ref) => state.removed(ref),
  });
  const deps: ServiceDeps = {
    docker,
    config,
    network,
    checkpoints,
    engine,
    logger,
    sandboxOomScoreAdj: oom,
    oomScoreAdjFloor: floor,
    ownPorts,
    state,
    execExits,
    capabilities,
    crashAt,
  };
  await reconcile(deps, logger);
  const stopJanitor = startNetworkJanitor(deps, logger);
  // Docker's json-files are readable only when Docker runs on this host (a unix socket)
  const endpoint = config.dockerEndpoint || process.env.DOCKER_HOST || 'unix:///var/run/docker.sock';
  const dockerIsLocal = endpoint.startsWith('unix://') || endpoint.startsWith('/');
  const logs = createLogManager(docker, logger, {
    positions: dockerIsLocal ? createLogPositionStore(path.join(config.rootDirectory, 'container-logs')) : undefined,
    dockerRootDir: () => engine.current().dockerRootDir,
    inspect: (id) => mustFindContainer(deps, id),
  });
  await resumeLogCopies(deps, logs);
  engine.onRecovered(catchUpAfterOutage(deps, logs, startedAt));
  const daemonEvents = refreshOnDaemonEvents(engine, docker, logger);
  const streaming = await startStreamingServer({ ...parseBindAddr(config.streamingBindAddr), docker, logger });
  ownPorts.add(Number(new URL(streaming.baseUrl).port));
  // known before the CRI socket opens, although the metrics server itself starts later
  const metricsPort = Number(/:(\d+)$/.exec(config.metricsBindAddress)?.[1] ?? 0);
  if (metricsPort) ownPorts.add(metricsPort);
  const service = createDockerService(deps, logs, streaming, hugetlbCgroup());
  const server = await startCriServer({
    endpoint: config.containerRuntimeEndpoint,
    runtime: service.runtime,
    image: service.image,
    logger,
    onCallDone: metrics ? (method, code, seconds) => metrics.observeRpc(method, code, seconds) : undefined,
  });
  metrics?.setStateCollector(async () => {
    const [pods, ctrs] = await Promise.all([listSandboxes(deps, null), listContainers(deps, null)]);
    return { sandboxes: countBy(pods.map((p) => p.state)), containers: countBy(ctrs.map((c) => c.state)) };
  });
  const metricsServer =
    metricsModule && metrics
      ? await metricsModule.startMetricsServer(config.metricsBindAddress, metrics, logger)
      : undefined;
  if (metricsServer) ownPorts.add(metricsServer.port);

  return {
    socketPath: server.socketPath,
    deps,
    async close() {
      // event streams never end on their own: close them so shutdown is not held up
      service.events.close();
      await server.shutdown();
      await streaming.close();
      await metricsServer?.close();
      stopJanitor();
      daemonEvents.close();
      logs.closeAll();
      network.close();
      engine.close();
      stalls.close();
      state.close();
    },
  };
}

/**
 * What start-up does once, again each time Docker comes back from an outage
 * (start-up may have found it down): reconciliation, limited to what predates
 * this process since RPCs are live now, and the CRI log copies, whose Docker
 * streams broke with the engine.
 */
function catchUpAfterOutage(
  deps: ServiceDeps,
  logs: ReturnType<typeof createLogManager>,
  startedAt: bigint,
): () => void {
  let running: Promise<void> | undefined;
  return () => {
    if (running) return;
    deps.logger.info('docker is back: reconciling and resuming log copies');
    running = (async () => {
      await reconcile(deps, deps.logger, { createdBefore: startedAt });
      await resumeLogCopies(deps, logs);
    })()
      .catch((err: unknown) => {
        deps.logger.error('catching up after a docker outage failed', { error: (err as Error).message });
      })
      .finally(() => (running = undefined));
  };
}

/**
 * After a restart, picks the CRI log copy up where the files end: running
 * containers keep being followed, exited ones get their last output flushed.
 * Only this crishim's containers: cri-dockerd's log paths are symlinks to
 * Docker's own log, which must never be written to.
 */
async function resumeLogCopies(deps: ServiceDeps, logs: ReturnType<typeof createLogManager>): Promise<void> {
  let containers;
  try {
    containers = await deps.docker.listContainers({
      label: [`${TYPE_LABEL}=${TYPE_CONTAINER}`, `${ROOT_LABEL}=${deps.config.rootDirectory}`],
    });
  } catch (err) {
    deps.logger.warn('cannot list containers to resume log copies', { error: (err as Error).message });
    return;
  }
  // positions of containers removed while crishim was down
  await logs.prune(new Set(containers.map((c) => c.Id))).catch((err: Error) => {
    deps.logger.warn('cannot prune saved container log positions', { error: err.message });
  });
  for (const c of containers) {
    const logPath = c.Labels[CONTAINER_LOGPATH_LABEL];
    if (!logPath || c.State === 'created') continue;
    const info = await deps.docker.inspectContainer(c.Id).catch(() => undefined);
    if (info) logs.follow(c.Id, logPath, info.Config.Tty);
  }
}

function countBy(values: Array<string | number | undefined>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) {
    const k = String(v ?? 'unknown');
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** `host:port`, `[v6]:port` or a bare host (ephemeral port) for --streaming-bind-addr. */
export function parseBindAddr(value: string): { bindAddress: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*))(?::(\d+))?$/.exec(value);
  if (!m) throw new Error(`--streaming-bind-addr ${JSON.stringify(value)}: expected host:port`);
  return { bindAddress: m[1] ?? (m[2] || '127.0.0.1'), port: m[3] ? Number(m[3]) : 0 };
}
