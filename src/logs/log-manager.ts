import { accessSync, closeSync, constants as fsConstants, lstatSync, readFileSync } from 'fs';
import type { DockerApi } from '../docker/client';
import { CriLogFile, lastEntries, truncateToMark } from '../logging/cri-log';
import type { Logger } from '../logging/logger';
import { openLogForAppend } from '../logging/safe-path';
import { shortId } from '../logging/logger';
import { startJsonFileCopy } from './json-file-copy';
import type { RecordFilter } from './json-file-records';
import type { LogPositionStore } from './log-positions';
import { isDockerNotFound } from '../docker/errors';
import type { Follower } from './follower';
import { copyThroughApi, type ApiCopyEnv } from './api-copy';

/**
 * Copies each container's output from Docker's json-file log into its CRI log file, one
 * follower per container, in one of two ways:
 * - local (Docker on this host, `LogPath` readable): the json-file itself is followed across
 *   Docker's rotations with an exact, persisted position (src/logs/), so restarts of crishim,
 *   of the container or of Docker resume at the byte;
 * - logs API (a remote Docker): the logs stream with timestamps, resumed after the last entry
 *   already in the CRI file (exact unless Docker's own follow repeats or drops records).
 */
export interface LogManager {
  /** Starts copying (no-op when already copying). */
  follow(containerId: string, logPath: string, tty: boolean): void;
  /** Reopens the file after the kubelet rotated it; false when nothing copies for this container. */
  reopen(containerId: string): boolean;
  /** Stops copying (shutdown); the saved position stays for the next start. */
  stop(containerId: string): void;
  /** Stops copying and forgets the saved position (container removed). */
  remove(containerId: string): Promise<void>;
  /** Forgets saved positions of containers not in `keep` (removed while crishim was down). */
  prune(keep: ReadonlySet<string>): Promise<void>;
  /** Resolves when the follower for a container has drained (tests, shutdown). */
  idle(containerId: string): Promise<void>;
  /**
   * For a container Docker reports exited: has its copy check now and waits, at most
   * `timeoutMs`, for the last line to be written, so whoever saw EXITED finds the whole output.
   */
  drained(containerId: string, timeoutMs: number): Promise<void>;
  closeAll(): void;
}

export interface LogManagerOptions {
  /** First and longest wait between attempts while Docker is unreachable. */
  retryMinMs?: number;
  retryMaxMs?: number;
  /**
   * Follow Docker's json-file directly (Docker runs on this host), saving positions here.
   * Without it every copy goes through the logs API.
   */
  positions?: LogPositionStore;
}

/** Start time of a process (field 22 of /proc/<pid>/stat), which tells it from a later one reusing the pid. */
function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
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

export function createLogManager(docker: DockerApi, logger: Logger, opts: LogManagerOptions = {}): LogManager {
  const followers = new Map<string, Follower>();
  const retryMinMs = opts.retryMinMs ?? 1000;
  const retryMaxMs = opts.retryMaxMs ?? 30_000;

  /** Ends a follower; called in the same tick as the last check, so any later follow() starts a new one. */
  const finish = (containerId: string, f: Follower): void => {
    f.file?.close();
    if (followers.get(containerId) === f) followers.delete(containerId);
  };
  const apiEnv: ApiCopyEnv = { docker, retryMinMs, retryMaxMs, finish };

  /**
   * Docker's json-file of the container when this host can read it (and it is plain json-file,
   * not compressed); undefined sends the copy through the logs API.
   */
  const localJsonFile = async (containerId: string, log: Logger): Promise<string | undefined> => {
    let why: string;
    try {
      const info = await docker.getContainer(containerId).inspect();
      const logConfig = info.HostConfig?.LogConfig;
      if (!info.LogPath) why = 'docker reports no json-file for it';
      else if (logConfig?.Type !== 'json-file') why = `its log driver is ${logConfig?.Type ?? 'unknown'}`;
      else if (logConfig.Config?.compress === 'true') why = 'its rotated json-files are compressed';
      else {
        accessSync(info.LogPath, fsConstants.R_OK);
        return info.LogPath;
      }
    } catch (err) {
      why = (err as Error).message;
    }
    // degraded: the logs API gives no position to resume at exactly
    log.warn('container json-file not readable here; copying its logs through the Docker logs API', { reason: why });
    return undefined;
  };

  /** The local copy: restarted when the container is started again just as the copy ended. */
  const copyLocally = async (containerId: string, logPath: string, jsonPath: string, positions: LogPositionStore, log: Logger, f: Follower): Promise<void> => {
    const saved = positions.load(containerId);
    let skip: RecordFilter | undefined;
    try {
      if (saved) {
        const cut = truncateToMark(logPath, saved.cri);
        if (cut?.dropped) log.info('dropped CRI log entries written after the last saved position; they are copied again', { file: cut.path, bytes: cut.dropped });
      }
      f.file = new CriLogFile(logPath);
      // a CRI file without a saved position was written by an older crishim: go on after its last entry
      if (!saved && f.file.mark().size > 0) skip = skipUpTo(lastEntries(logPath));
    } catch (err) {
      log.error('cannot open container log file', { logPath, error: (err as Error).message });
      finish(containerId, f);
      return;
    }
    // an idle copy asks whether the container still runs every second: the process table answers
    // that without a Docker call while the container's main process lives
    let main: { pid: number; started: string } | undefined;
    const isRunning = async (): Promise<boolean | undefined> => {
      if (main && processStart(main.pid) === main.started) return true;
      try {
        const state = (await docker.getContainer(containerId).inspect()).State;
        const started = state.Running && state.Pid > 0 ? processStart(state.Pid) : undefined;
        main = started ? { pid: state.Pid, started } : undefined;
        return state.Running;
      } catch (err) {
        return isDockerNotFound(err) ? false : undefined;
      }
    };
    for (let first = true; ; first = false) {
      f.kicked = false;
      const copy = startJsonFileCopy({
        containerId,
        jsonPath,
        file: f.file,
        positions,
        saved: first ? saved : positions.load(containerId),
        skip: first ? skip : undefined,
        isRunning,
        log,
      });
      f.copy = copy;
      f.interrupt = () => copy.stop();
      await copy.done;
      if (f.stopped || !f.kicked) break;
    }
    finish(containerId, f);
  };

  const start = (containerId: string, logPath: string, tty: boolean): void => {
    const log = logger.child({ containerId: shortId(containerId) });
    // a symlink here is cri-dockerd's link to Docker's own json log: never write through it
    if (lstatSync(logPath, { throwIfNoEntry: false })?.isSymbolicLink()) {
      log.info('container log path is a symlink (cri-dockerd container); not copying logs', { logPath });
      return;
    }
    // the kubelet (and critest) open the file as soon as StartContainer answers: create it now,
    // before the copy mode is known
    try {
      closeSync(openLogForAppend(logPath));
    } catch (err) {
      log.error('cannot create container log file', { logPath, error: (err as Error).message });
    }
    const f: Follower = { stopped: false, kicked: false, interrupt: () => undefined, done: Promise.resolve() };
    const positions = opts.positions;
    f.done = (async () => {
      const jsonPath = positions ? await localJsonFile(containerId, log) : undefined;
      if (f.stopped) return;
      if (jsonPath && positions) await copyLocally(containerId, logPath, jsonPath, positions, log, f);
      else await copyThroughApi(apiEnv, containerId, logPath, tty, log, f);
    })();
    followers.set(containerId, f);
  };

  return {
    follow(containerId, logPath, tty) {
      const f = followers.get(containerId);
      if (!f) start(containerId, logPath, tty);
      else if (!f.copy?.kick()) f.kicked = true;
    },
    reopen(containerId) {
      const f = followers.get(containerId);
      if (!f) return false;
      // before the file is open there is nothing to reopen: it will be opened at the new path
      f.file?.reopen();
      return true;
    },
    stop(containerId) {
      const f = followers.get(containerId);
      if (!f) return;
      f.stopped = true;
      f.interrupt();
      f.file?.close();
      followers.delete(containerId);
    },
    async remove(containerId) {
      // a save still in flight may land after this; the next start-up prunes it
      this.stop(containerId);
      await opts.positions?.remove(containerId);
    },
    async prune(keep) {
      if (!opts.positions) return;
      for (const id of await opts.positions.list()) if (!keep.has(id) && !followers.has(id)) await opts.positions.remove(id);
    },
    async idle(containerId) {
      await followers.get(containerId)?.done;
    },
    async drained(containerId, timeoutMs) {
      const f = followers.get(containerId);
      if (!f) return;
      f.copy?.kick();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([f.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
    closeAll() {
      for (const id of [...followers.keys()]) this.stop(id);
    },
  };
}
