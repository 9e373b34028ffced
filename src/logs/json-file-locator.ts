import { accessSync, constants as fsConstants } from 'fs';
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
  let why: string;
  try {
    const info = await inspect();
    const logConfig = info.HostConfig?.LogConfig;
    if (!info.LogPath) why = 'docker reports no json-file for it';
    else if (logConfig?.Type !== 'json-file') why = `its log driver is ${logConfig?.Type ?? 'unknown'}`;
    else if (logConfig.Config?.compress === 'true') why = 'its rotated json-files are compressed';
    else {
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
