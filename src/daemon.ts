import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Config } from './config';
import { createCheckpointStore } from './checkpoint/store';
import { createDockerService } from './cri/docker-service';
import type { ServiceDeps } from './cri/deps';
import { connectDocker } from './docker/client';
import { createEngineInfo } from './docker/engine-info';
import { lowestOomScoreAdj } from './docker/oom-score';
import type { Logger } from './logging/logger';
import { createNetworkPlugin } from './network/plugin-manager';
import { startCriServer } from './server/grpc-server';

/** dockershim's value for pause containers: the pod's last process to be OOM-killed. */
export const SANDBOX_OOM_SCORE_ADJ = -998;

export interface Daemon {
  readonly socketPath: string;
  readonly deps: ServiceDeps;
  close(): Promise<void>;
}

/** Wires config -> Docker, network, checkpoints, handlers -> gRPC server. */
export async function startDaemon(config: Config, logger: Logger): Promise<Daemon> {
  await fsp.mkdir(config.rootDirectory, { recursive: true, mode: 0o700 });
  const client = await connectDocker(
    { endpoint: config.dockerEndpoint, tlsCa: config.dockerTlsCa, tlsCert: config.dockerTlsCert, tlsKey: config.dockerTlsKey },
    logger,
  );
  const engine = createEngineInfo(client.api, logger);
  await engine.refresh();

  const oom = await lowestOomScoreAdj(SANDBOX_OOM_SCORE_ADJ);
  if (oom !== SANDBOX_OOM_SCORE_ADJ) {
    logger.warn(`this host refuses oom_score_adj ${SANDBOX_OOM_SCORE_ADJ}; pause containers get ${oom} instead`, {
      lowestAllowed: oom,
    });
  }

  const checkpoints = await createCheckpointStore(path.join(config.rootDirectory, 'sandbox'), logger);
  const network = createNetworkPlugin({
    plugin: config.networkPlugin,
    confDir: config.cniConfDir,
    binDirs: config.cniBinDirs,
    cacheDir: config.cniCacheDir,
    logger,
  });
  if (config.podCidr) network.setPodCidr(config.podCidr);

  const deps: ServiceDeps = { docker: client.api, config, network, checkpoints, engine, logger, sandboxOomScoreAdj: oom };
  const service = createDockerService(deps);
  const server = await startCriServer({ endpoint: config.containerRuntimeEndpoint, runtime: service.runtime, image: service.image, logger });

  return {
    socketPath: server.socketPath,
    deps,
    async close() {
      await server.shutdown();
      network.close();
      engine.close();
    },
  };
}
