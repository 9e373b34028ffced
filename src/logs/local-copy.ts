import { readFileSync } from 'fs';
import { isNotFound } from '../errors';
import { CriLogFile, lastEntries, truncateToMark } from '../logging/cri-log';
import type { Logger } from '../logging/logger';
import { startJsonFileCopy, type JsonFileCopy, type JsonFileCopyOptions } from './json-file-copy';
import type { RecordFilter } from './json-file-records';
import type { LogFollower } from './follower';
import type { LogPositionStore } from './log-positions';

/** The container's main process as Docker reports it. */
export interface ContainerProcess {
  Running: boolean;
  Pid: number;
}

export interface LocalLogCopyOptions {
  containerId: string;
  logPath: string;
  /** Docker's json-file of the container, readable here. */
  jsonPath: string;
  positions: LogPositionStore;
  log: Logger;
  /** Docker's inspect of the container's state; rejects with Docker's errors. */
  inspectState: () => Promise<ContainerProcess>;
  /** Called in the same tick as the copy's last check, so a later follow() starts a new copy. */
  finished: () => void;
  /**
   * The copy begins before Docker is asked to start the container: until `started()`, Docker's
   * "not running" is the container not started yet, not its exit.
   */
  beforeStart?: boolean;
  /** Start time of a process, which tells it from a later one reusing the pid (tests fake it). */
  processStart?: (pid: number) => string | undefined;
  /** The copy loop of one run (tests fake it). */
  startCopy?: (o: JsonFileCopyOptions) => JsonFileCopy;
}

/**
 * For a CRI file an older crishim wrote without saving positions: drops the records up to its
 * last entry (those with an earlier time, and as many with the same time as the file holds).
 */
export function skipUpTo(last: { timestamp: string; count: number } | undefined): RecordFilter | undefined {
  if (!last) return undefined;
  let same = last.count;
  let past = false;
  return (time) => {
    if (past || time > last.timestamp) return (past = true);
    if (time < last.timestamp) return false;
    if (same > 0) {
      same -= 1;
      return false;
    }
    return (past = true);
  };
}

/** Start time of a process (field 22 of /proc/<pid>/stat). */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * The local copy (Docker on this host): Docker's json-file followed across its rotations with
 * a saved, exact position (json-file-copy.ts); restarted when the container is started again
 * just as a copy ended.
 */
export class LocalLogCopy implements LogFollower {
  file: CriLogFile | undefined;
  private copy: JsonFileCopy | undefined;
  private stopped = false;
  private kicked = false;
  /** The live main process, so an idle copy's "still running?" needs no Docker call. */
  private main: { pid: number; started: string } | undefined;
  private awaitingStart: boolean;

  constructor(private readonly o: LocalLogCopyOptions) {
    this.awaitingStart = o.beforeStart ?? false;
  }

  async run(): Promise<void> {
    const { containerId, logPath, positions, log } = this.o;
    const saved = positions.load(containerId);
    let skip: RecordFilter | undefined;
    try {
      if (saved) {
        const cut = truncateToMark(logPath, saved.cri);
        if (cut?.dropped)
          log.info('dropped CRI log entries written after the last saved position; they are copied again', {
            file: cut.path,
            bytes: cut.dropped,
          });
      }
      this.file = new CriLogFile(logPath);
      // a CRI file without a saved position was written by an older crishim: go on after its last entry
      if (!saved && this.file.mark().size > 0) skip = skipUpTo(lastEntries(logPath));
    } catch (err) {
      log.error('cannot open container log file', { logPath, error: (err as Error).message });
      this.o.finished();
      return;
    }
    const start = this.o.startCopy ?? startJsonFileCopy;
    for (let first = true; ; first = false) {
      this.kicked = false;
      const copy = start({
        containerId,
        jsonPath: this.o.jsonPath,
        file: this.file,
        positions,
        saved: first ? saved : positions.load(containerId),
        skip: first ? skip : undefined,
        isRunning: () => this.isRunning(),
        log,
      });
      this.copy = copy;
      if (this.stopped) copy.stop();
      await copy.done;
      if (this.stopped || !this.kicked) break;
    }
    this.o.finished();
  }

  restart(): void {
    // a copy that has already decided to end is followed by another
    if (!this.copy?.kick()) this.kicked = true;
  }

  checkNow(): void {
    this.copy?.kick();
  }

  /** Docker answered the start: from now on "not running" means exited (checked at once, it may have already). */
  started(): void {
    this.awaitingStart = false;
    this.copy?.kick();
  }

  stop(): void {
    this.stopped = true;
    this.copy?.stop();
  }

  /** An idle copy asks this every second: the process table answers while the main process lives. */
  private async isRunning(): Promise<boolean | undefined> {
    if (this.awaitingStart) return true;
    const started = this.o.processStart ?? processStart;
    if (this.main && started(this.main.pid) === this.main.started) return true;
    try {
      const state = await this.o.inspectState();
      const t = state.Running && state.Pid > 0 ? started(state.Pid) : undefined;
      this.main = t ? { pid: state.Pid, started: t } : undefined;
      return state.Running;
    } catch (err) {
      return isNotFound(err) ? false : undefined;
    }
  }
}
