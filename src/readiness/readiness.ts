import type { EngineSnapshot } from '../docker/engine-info';
import type { Logger } from '../logging/logger';
import type { NetworkStatus } from '../network/types';
import type { Notifier } from './notify';

export interface ReadinessOptions {
  notifier: Notifier;
  engine: { current(): EngineSnapshot; onRecovered(fn: () => void): void };
  network: { status(): NetworkStatus };
  /** Where Docker is expected, for the STATUS= line (empty: DOCKER_HOST or the default socket). */
  dockerEndpoint: string;
  /** The CRI socket being served. */
  socketPath: string;
  logger: Logger;
  /** WATCHDOG_USEC / WATCHDOG_PID come from here. */
  env?: NodeJS.ProcessEnv;
  pid?: number;
  /** How often the status is re-evaluated (it changes with Docker and the CNI config). */
  intervalMs?: number;
}

export interface Readiness {
  /** True once READY=1 was sent (or would have been, without systemd). */
  readonly ready: boolean;
  /** Re-evaluates now; the timer does this on its own. */
  update(): Promise<void>;
  /** STOPPING=1; stops the timers. */
  stopping(): Promise<void>;
}

/** What `systemctl status crishim` shows, and whether the daemon counts as ready (Docker answered). */
export function describeState(
  engine: EngineSnapshot,
  network: NetworkStatus,
  dockerEndpoint: string,
  socketPath: string,
): { ready: boolean; status: string } {
  if (!engine.reachable) {
    const where = dockerEndpoint || 'the default Docker endpoint';
    return { ready: false, status: `waiting for Docker at ${where}: ${engine.error ?? 'not reachable'}` };
  }
  if (engine.unresponsive) return { ready: false, status: engine.unresponsive };
  if (!network.ready)
    return { ready: true, status: `serving CRI on ${socketPath}; waiting for a CNI config: ${network.message}` };
  return {
    ready: true,
    status: `serving CRI on ${socketPath} (Docker ${engine.version ?? 'unknown'}, network ${network.configName ?? 'ready'})`,
  };
}

/** The WATCHDOG=1 period systemd asked for (half its timeout, as sd_watchdog_enabled(3) advises), or undefined. */
export function watchdogIntervalMs(env: NodeJS.ProcessEnv, pid: number): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (!Number.isFinite(usec) || usec <= 0) return undefined;
  // WATCHDOG_PID names the process the watchdog is for; a child that inherited the variables is not it
  if (env.WATCHDOG_PID && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return Math.max(1, Math.floor(usec / 2000));
}

/**
 * Type=notify readiness: READY=1 once the CRI socket serves (the caller starts
 * this after the server listens) and Docker has answered, a STATUS= line
 * naming what is awaited, WATCHDOG=1 pings, STOPPING=1 at shutdown.
 */
export function startReadiness(opts: ReadinessOptions): Readiness {
  const { notifier, logger } = opts;
  const env = opts.env ?? process.env;
  const pid = opts.pid ?? process.pid;
  let ready = false;
  let lastStatus = '';
  let stopped = false;

  const update = async (): Promise<void> => {
    if (stopped) return;
    const state = describeState(opts.engine.current(), opts.network.status(), opts.dockerEndpoint, opts.socketPath);
    const fields: Record<string, string> = {};
    if (state.status !== lastStatus) fields.STATUS = state.status;
    if (state.ready && !ready) fields.READY = '1';
    if (Object.keys(fields).length === 0) return;
    lastStatus = state.status;
    if (fields.READY) {
      ready = true;
      logger.info('ready', { status: state.status, notify: notifier.enabled });
    } else if (!state.ready) {
      logger.warn('not ready yet', { status: state.status });
    }
    await notifier.send(fields);
  };

  const timer = setInterval(() => void update(), opts.intervalMs ?? 5000);
  timer.unref();
  opts.engine.onRecovered(() => void update());
  const watchdogMs = notifier.enabled ? watchdogIntervalMs(env, pid) : undefined;
  const watchdog = watchdogMs ? setInterval(() => void notifier.send({ WATCHDOG: '1' }), watchdogMs) : undefined;
  watchdog?.unref();
  void update();

  return {
    get ready() {
      return ready;
    },
    update,
    async stopping() {
      stopped = true;
      clearInterval(timer);
      if (watchdog) clearInterval(watchdog);
      await notifier.send({ STOPPING: '1', STATUS: 'shutting down' });
    },
  };
}
