import type { Config } from '../config';
import type { DockerEngine } from '../docker/engine';
import type { EngineSnapshot } from '../docker/engine-info';
import type { Logger } from '../logging/logger';
import { hostProbes } from './probes';
import { runChecks } from './run';

/** The doctor's checks in the daemon's start-up log: one line each, at the level their status calls for. */
export async function logHostChecks(
  config: Config,
  engine: EngineSnapshot,
  docker: DockerEngine,
  logger: Logger,
): Promise<void> {
  const results = await runChecks({ config, engine, probes: hostProbes(docker, logger) });
  for (const r of results) {
    const fields = { check: r.name, found: r.found, ...(r.action && r.status !== 'ok' ? { action: r.action } : {}) };
    if (r.status === 'ok') logger.info('host check ok', fields);
    else if (r.status === 'warn') logger.warn('host check warning', fields);
    else logger.error('host check failed', fields);
  }
}
