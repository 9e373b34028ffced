import type { DockerEngine } from './engine';
import { followDockerEvents, type EventSource } from './events';
import type { Logger } from '../logging/logger';
import { describeStall, type StallWatch } from './stall-watch';

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
  /** Set while a call that a working dockerd answers at once has waited past the stall timeout. */
  unresponsive?: string;
}

export interface EngineInfo {
  /** Last known state, and any stalled call; costs no Docker round trip (the kubelet calls Status every few seconds). */
  current(): EngineSnapshot;
  /** Probes now (ping, and info/version if stale, after an outage or when `force`d). */
  refresh(opts?: { force?: boolean }): Promise<EngineSnapshot>;
  /** Calls `fn` each time a probe finds Docker reachable after it was not (not for the first probe). */
  onRecovered(fn: () => void): void;
  /** Tells the cache Docker just failed to answer, so Status reflects it before the next probe. */
  markUnreachable(error: string): void;
  close(): void;
}

export interface EngineInfoOptions {
  /** How often the timer pings (default 5 s). */
  intervalMs?: number;
  /** The calls in flight: a ping to a hung dockerd never fails, so they tell that case apart. */
  stalls?: Pick<StallWatch, 'stalled'>;
}

/** Caches `docker info`/`version`; a timer pings to notice outages and recoveries. */
export function createEngineInfo(
  docker: DockerEngine,
  logger: Logger,
  { intervalMs = 5000, stalls }: EngineInfoOptions = {},
): EngineInfo {
  let snap: EngineSnapshot = { reachable: false, runtimes: [], checkedAt: new Date(0), error: 'not probed yet' };
  let infoAt = 0;
  let inFlight: Promise<EngineSnapshot> | undefined;
  let probedOnce = false;
  const recovered: Array<() => void> = [];
  const INFO_TTL_MS = 60_000;

  const probe = async (force: boolean): Promise<EngineSnapshot> => {
    const wasReachable = snap.reachable;
    try {
      await docker.ping();
      if (force || !snap.reachable || Date.now() - infoAt > INFO_TTL_MS) {
        const [info, version] = await Promise.all([docker.info(), docker.version()]);
        infoAt = Date.now();
        if (!snap.reachable) logger.info('docker is reachable', { dockerVersion: version.Version });
        snap = {
          reachable: true,
          version: version.Version,
          apiVersion: version.ApiVersion,
          cgroupDriver: info.CgroupDriver,
          cgroupVersion: info.CgroupVersion,
          dockerRootDir: info.DockerRootDir,
          runtimes: Object.keys(info.Runtimes ?? {}),
          defaultRuntime: info.DefaultRuntime,
          checkedAt: new Date(),
        };
      } else {
        snap = { ...snap, checkedAt: new Date() };
      }
    } catch (err) {
      if (snap.reachable) logger.warn('docker became unreachable', { error: (err as Error).message });
      snap = { ...snap, reachable: false, error: (err as Error).message, checkedAt: new Date() };
    }
    if (probedOnce && !wasReachable && snap.reachable) notifyRecovered();
    probedOnce = true;
    return snap;
  };

  const notifyRecovered = (): void => {
    for (const fn of recovered) {
      try {
        fn();
      } catch (err) {
        logger.error('docker recovery handler failed', { error: (err as Error).message });
      }
    }
  };

  const refresh = (opts: { force?: boolean } = {}): Promise<EngineSnapshot> => {
    // a forced refresh must not be satisfied by a probe that decided to skip info/version
    if (opts.force && inFlight) return inFlight.then(() => refresh(opts));
    inFlight ??= probe(opts.force ?? false).finally(() => (inFlight = undefined));
    return inFlight;
  };
  const timer = setInterval(() => void refresh(), intervalMs);
  timer.unref();

  return {
    current: () => {
      const stalled = stalls?.stalled();
      return stalled ? { ...snap, unresponsive: describeStall(stalled) } : snap;
    },
    refresh,
    onRecovered(fn) {
      recovered.push(fn);
    },
    markUnreachable(error) {
      snap = { ...snap, reachable: false, error, checkedAt: new Date() };
    },
    close: () => clearInterval(timer),
  };
}

/**
 * Re-reads info/version on Docker `daemon` events (e.g. `reload` after a
 * daemon.json change adds a runtime), instead of waiting for the cache to age.
 */
export function refreshOnDaemonEvents(engine: EngineInfo, docker: DockerEngine, logger: Logger): EventSource {
  return followDockerEvents(
    docker,
    { type: ['daemon'] },
    (ev) => {
      logger.info('docker daemon event; refreshing engine info', { action: ev.Action });
      void engine.refresh({ force: true });
    },
    logger,
  );
}

/**
 * The engine snapshot to check a runtime handler against: the cached one if it
 * knows the handler, else a fresh one (the runtime may have been added since),
 * so an unknown handler is only refused after Docker itself was asked.
 */
export async function engineForRuntime(engine: EngineInfo, handler: string): Promise<EngineSnapshot> {
  const snap = engine.current();
  if (snap.reachable && snap.runtimes.includes(handler)) return snap;
  return engine.refresh({ force: true });
}
