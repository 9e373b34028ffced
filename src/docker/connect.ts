import { connectDocker, type DockerEndpointOptions } from './client';
import { DockerodeEngine } from './dockerode-engine';
import type { DockerEngine } from './engine';
import type { Logger } from '../logging/logger';

export interface ConnectedEngine {
  engine: DockerEngine;
  /** API version negotiated with the engine (e.g. `1.41`), or undefined when it was down at startup. */
  apiVersion: string | undefined;
}

/** Connects to the Docker endpoint (flag, else DOCKER_HOST, else the default socket) and answers the engine over it. */
export async function connectEngine(opts: DockerEndpointOptions, logger: Logger): Promise<ConnectedEngine> {
  const client = await connectDocker(opts, logger);
  return { engine: new DockerodeEngine(client.api), apiVersion: client.apiVersion };
}
