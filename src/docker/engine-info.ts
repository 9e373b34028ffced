import type { DockerApi } from './client';
import type { Logger } from '../logging/logger';

export interface EngineSnapshot {
  reachable: boolean;
  /** Why the last probe failed, when it did. */
  error?: string;
  version?: string;
  apiVersion?: string;
  cgroupDriver?: string;
  cgroupVersion?: string;
  dockerRootDir?: string;
  runtimes: string[];
  defaultRuntime?: string;
  checkedAt: Date;
}

export interface EngineInfo {
  /** Last known state; costs no Docker round trip (the kubelet calls Status every few seconds). */
  current(): EngineSnapshot;
  /** Probes now (ping, and info/version if stale or after an outage). */
  refresh(): Promise<EngineSnapshot>;
  /** Tells the cache Docker just failed to answer, so Status reflects it before the next probe. */
  markUnreachable(error: string): void;
  close(): void;
}

/** Caches `docker info`/`version`; a timer pings to notice outages and recoveries. */
export function createEngineInfo(docker: DockerApi, logger: Logger, intervalMs = 5000): EngineInfo {
  let snap: EngineSnapshot = { reachable: false, runtimes: [], checkedAt: new Date(0), error: 'not probed yet' };
  let infoAt = 0;
  let inFlight: Promise<EngineSnapshot> | undefined;
  const INFO_TTL_MS = 60_000;

  const probe = async (): Promise<EngineSnapshot> => {
    try {
      await docker.ping();
      if (!snap.reachable || Date.now() - infoAt > INFO_TTL_MS) {
        const [info, version] = await Promise.all([docker.info(), docker.version()]);
        infoAt = Date.now();
        const i = info as {
          CgroupDriver?: string;
          CgroupVersion?: string;
          DockerRootDir?: string;
          Runtimes?: Record<string, unknown>;
          DefaultRuntime?: string;
        };
        if (!snap.reachable) logger.info('docker is reachable', { dockerVersion: version.Version });
        snap = {
          reachable: true,
          version: version.Version,
          apiVersion: version.ApiVersion,
          cgroupDriver: i.CgroupDriver,
          cgroupVersion: i.CgroupVersion,
          dockerRootDir: i.DockerRootDir,
          runtimes: Object.keys(i.Runtimes ?? {}),
          defaultRuntime: i.DefaultRuntime,
          checkedAt: new Date(),
        };
      } else {
        snap = { ...snap, checkedAt: new Date() };
      }
    } catch (err) {
      if (snap.reachable) logger.warn('docker became unreachable', { error: (err as Error).message });
      snap = { ...snap, reachable: false, error: (err as Error).message, checkedAt: new Date() };
    }
    return snap;
  };

  const refresh = (): Promise<EngineSnapshot> => {
    inFlight ??= probe().finally(() => (inFlight = undefined));
    return inFlight;
  };
  const timer = setInterval(() => void refresh(), intervalMs);
  timer.unref();

  return {
    current: () => snap,
    refresh,
    markUnreachable(error) {
      snap = { ...snap, reachable: false, error, checkedAt: new Date() };
    },
    close: () => clearInterval(timer),
  };
}
