import { watch } from 'fs';
import type { Logger } from '../logging/logger';
import type { NetworkConfList, ProbeResult } from './cni-config';

/** A live watch on the conf dir; `close` stops it. */
export interface DirWatch {
  close(): void;
}

/**
 * Starts watching the conf dir: `onEvent` on every change, `onGone` when the
 * watch breaks (e.g. the directory was removed). Throws when the directory
 * does not exist.
 */
export type WatchDir = (onEvent: () => void, onGone: () => void) => DirWatch;

/** fs.watch on `dir`, not keeping the process alive. */
export function fsWatchDir(dir: string): WatchDir {
  return (onEvent, onGone) => {
    const w = watch(dir, { persistent: false }, onEvent);
    w.on('error', onGone);
    return w;
  };
}

export interface ConfigWatcherDeps {
  /** Reads the conf dir now: the first valid config and what keeps it from being usable. */
  probe: () => ProbeResult;
  watchDir: WatchDir;
  logger: Logger;
  /** Fallback re-probe period (the watch does most of the work). */
  intervalMs: number;
  /** Editors and `cp` write in several steps: probe once the burst of watch events is over. */
  settleMs: number;
}

/**
 * The CNI config in use: probed at start, on every change of the conf dir
 * (after a short settle) and periodically, which also re-attaches the watch to
 * a directory created or re-created later.
 */
export class CniConfigWatcher {
  private config: NetworkConfList | undefined;
  private why = '';
  private watcher: DirWatch | undefined;
  private settleTimer: NodeJS.Timeout | undefined;
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly deps: ConfigWatcherDeps) {
    this.refresh();
    this.timer = setInterval(() => this.refresh(), deps.intervalMs);
    this.timer.unref();
  }

  /** The config in use, undefined before a valid one was found. */
  get current(): NetworkConfList | undefined {
    return this.config;
  }

  /** Why the network is not ready ('' when it is, or when no probe has said). */
  get problem(): string {
    return this.why;
  }

  /** Probes now (a config changed a moment ago counts before the watch fires). */
  refresh(): void {
    if (this.closed) return;
    this.watch();
    const r = this.deps.probe();
    const before = { file: this.config?.file, problem: this.why };
    this.config = r.config;
    this.why = r.problem ?? '';
    if (this.config && !this.why && (this.config.file !== before.file || before.problem)) {
      this.deps.logger.info('CNI network is ready', { network: this.config.name, file: this.config.file });
    } else if (this.why && this.why !== before.problem) {
      this.deps.logger.warn('CNI network is not ready', { reason: this.why });
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.watcher?.close();
    this.watcher = undefined;
  }

  private watch(): void {
    if (this.watcher || this.closed) return;
    try {
      this.watcher = this.deps.watchDir(
        () => this.changed(),
        () => {
          // drop the broken watch: the next periodic probe re-attaches
          this.watcher?.close();
          this.watcher = undefined;
        },
      );
    } catch {
      /* the directory does not exist yet: the periodic probe finds it and watches it then */
    }
  }

  private changed(): void {
    if (this.settleTimer) return;
    this.settleTimer = setTimeout(() => {
      this.settleTimer = undefined;
      this.refresh();
    }, this.deps.settleMs);
    this.settleTimer.unref();
  }
}
