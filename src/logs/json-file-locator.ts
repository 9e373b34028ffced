import { accessSync, constants as fsConstants } from 'fs';
import * as path from 'path';
import type { Logger } from '../logging/logger';

/** The parts of Docker's inspect that say where (and how) the container's log is written. */
export interface LogInspect {
  LogPath?: string;
  HostConfig?: { LogConfig?: { Type?: string; Config?: Record<string, string> } };
}

/**
 * Docker's json-file of the container when this host can read it (and it is plain json-file,
 * not compressed); undefined sends the copy through the logs API.
 */
export async function locateJsonFile(
  inspect: () => Promise<LogInspect>,
  log: Logger,
  readable: (file: string) => void = (f) => accessSync(f, fsConstants.R_OK),
): Promise<string | undefined> {
  let why: string | undefined;
  try {
    const info = await inspect();
    why = info.LogPath ? notPlainJsonFile(info) : 'docker reports no json-file for it';
    if (why === undefined && info.LogPath) {
      readable(info.LogPath);
      return info.LogPath;
    }
  } catch (err) {
    why = (err as Error).message;
  }
  // degraded: the logs API gives no position to resume at exactly
  log.warn('container json-file not readable here; copying its logs through the Docker logs API', { reason: why });
  return undefined;
}

/** Why the container's log cannot be followed as a plain json-file, or undefined when it can. */
function notPlainJsonFile(info: LogInspect): string | undefined {
  const logConfig = info.HostConfig?.LogConfig;
  if (logConfig?.Type !== 'json-file') return `its log driver is ${logConfig?.Type ?? 'unknown'}`;
  if (logConfig.Config?.compress === 'true') return 'its rotated json-files are compressed';
  return undefined;
}

/**
 * Where Docker will write the json-file of a container not started yet (Docker only sets
 * `LogPath` at start; json-file always puts it at `<data root>/containers/<id>/<id>-json.log`),
 * when its directory is readable here; undefined otherwise, and the copy waits for the start.
 */
export function jsonFileBeforeStart(
  containerId: string,
  info: LogInspect,
  dockerRootDir: string | undefined,
  readable: (dir: string) => void = (d) => accessSync(d, fsConstants.R_OK | fsConstants.X_OK),
): string | undefined {
  if (!dockerRootDir || notPlainJsonFile(info) !== undefined) return undefined;
  const dir = path.join(dockerRootDir, 'containers', containerId);
  try {
    readable(dir);
  } catch {
    return undefined;
  }
  return path.join(dir, `${containerId}-json.log`);
}
