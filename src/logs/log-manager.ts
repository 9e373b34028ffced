import { closeSync, existsSync, lstatSync, promises as fsp } from 'fs';
import * as path from 'path';
import type { DockerEngine } from '../docker/engine';
import type * as Docker from '../docker/types';
import type { Logger } from '../logging/logger';
import { openLogForAppend } from '../logging/safe-path';
import { shortId } from '../logging/logger';
import { ApiLogCopy } from './api-copy';
import type { LogFollower } from './follower';
import { jsonFileBeforeStart, locateJsonFile, type LogInspect } from './json-file-locator';
import { LocalLogCopy, type LocalLogCopyOptions } from './local-copy';
import type { LogPositionStore } from './log-positions';

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
  /**
   * Called just before Docker is asked to start the container. When Docker's json-file will be
   * readable here the copy begins now, watching for the file: a burst in the first moments then
   * cannot rotate its first files away before they are held open (following only after the
   * start and an inspect, that took long enough on a loaded host to lose a whole 2 MiB file).
   * The returned function takes Docker's answer: true goes on (or starts the copy the usual
   * way); false stops it and removes what it created, the CRI file and the saved position.
   */
  beforeStart(
    containerId: string,
    logPath: string,
    tty: boolean,
    info: LogInspect,
  ): (started: boolean) => Promise<void>;
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
  /** Docker's data root (`docker info`), under which a container's json-file will be: lets a copy begin before the start. */
  dockerRootDir?: () => string | undefined;
  /**
   * How a copy inspects its container (rejecting with not-found when it is gone): crishim's view,
   * where a container crishim just started or stopped is being re-inspected already. Else Docker.
   */
  inspect?: (containerId: string) => Promise<Docker.ContainerInspectInfo>;
}

/** One container's copy as the manager tracks it; the follower exists once the copy mode is known. */
interface Entry {
  follower?: LogFollower;
  /** For a copy begun before the start: Docker answered the start. */
  started?: () => void;
  done: Promise<void>;
  stopped: boolean;
}

/** One follower per container: a LocalLogCopy when Docker's json-file is readable here, else an ApiLogCopy. */
export function createLogManager(docker: DockerEngine, logger: Logger, opts: LogManagerOptions = {}): LogManager {
  const followers = new Map<string, Entry>();
  const inspect = opts.inspect ?? ((id: string) => docker.inspectContainer(id));
  const retryMinMs = opts.retryMinMs ?? 1000;
  const retryMaxMs = opts.retryMaxMs ?? 30_000;

  /** Ends a follower; called in the same tick as the last check, so any later follow() starts a new one. */
  const finish = (containerId: string, f: Entry): void => {
    f.follower?.file?.close();
    if (followers.get(containerId) === f) followers.delete(containerId);
  };

  const localOptions = (
    containerId: string,
    logPath: string,
    jsonPath: string,
    positions: LogPositionStore,
    log: Logger,
    f: Entry,
  ): LocalLogCopyOptions => ({
    containerId,
    logPath,
    jsonPath,
    positions,
    log,
    finished: () => finish(containerId, f),
    inspectState: async () => (await inspect(containerId)).State,
  });

  const followerFor = (
    containerId: string,
    logPath: string,
    tty: boolean,
    jsonPath: string | undefined,
    log: Logger,
    f: Entry,
  ): LogFollower => {
    const finished = (): void => finish(containerId, f);
    if (jsonPath && opts.positions)
      return new LocalLogCopy(localOptions(containerId, logPath, jsonPath, opts.positions, log, f));
    return new ApiLogCopy({
      source: {
        follow: (o) => docker.followContainerLogs(containerId, o),
        read: (o) => docker.containerLogs(containerId, o),
        running: async () => (await inspect(containerId)).State.Running,
      },
      logPath,
      tty,
      log,
      retryMinMs,
      retryMaxMs,
      finished,
    });
  };

  const stop = (containerId: string): void => {
    const f = followers.get(containerId);
    if (!f) return;
    f.stopped = true;
    f.follower?.stop();
    f.follower?.file?.close();
    followers.delete(containerId);
  };

  /** `early`: the json-file Docker will write, the copy beginning before Docker starts the container. */
  const start = (containerId: string, logPath: string, tty: boolean, early?: string): Entry | undefined => {
    const log = logger.child({ containerId: shortId(containerId) });
    // a symlink here is cri-dockerd's link to Docker's own json log: never write through it
    if (lstatSync(logPath, { throwIfNoEntry: false })?.isSymbolicLink()) {
      log.info('container log path is a symlink (cri-dockerd container); not copying logs', { logPath });
      return undefined;
    }
    // the kubelet (and critest) open the file as soon as StartContainer answers: create it now,
    // before the copy mode is known
    try {
      closeSync(openLogForAppend(logPath));
    } catch (err) {
      log.error('cannot create container log file', { logPath, error: (err as Error).message });
    }
    const f: Entry = { stopped: false, done: Promise.resolve() };
    if (early && opts.positions) {
      const copy = new LocalLogCopy({
        ...localOptions(containerId, logPath, early, opts.positions, log, f),
        beforeStart: true,
      });
      f.follower = copy;
      f.started = () => copy.started();
      f.done = copy.run();
      followers.set(containerId, f);
      return f;
    }
    f.done = (async () => {
      const jsonPath = opts.positions ? await locateJsonFile(() => inspect(containerId), log) : undefined;
      if (f.stopped) return;
      f.follower = followerFor(containerId, logPath, tty, jsonPath, log, f);
      await f.follower.run();
    })();
    followers.set(containerId, f);
    return f;
  };

  const follow = (containerId: string, logPath: string, tty: boolean): void => {
    const f = followers.get(containerId);
    if (!f) start(containerId, logPath, tty);
    else f.follower?.restart();
  };

  /** Undoes a copy begun before a start Docker refused: nothing of it may outlive the failure. */
  const abandon = async (
    containerId: string,
    f: Entry,
    logPath: string,
    created: { file: boolean; dir: boolean },
  ): Promise<void> => {
    stop(containerId);
    await f.done;
    await opts.positions?.remove(containerId);
    try {
      if (created.file && lstatSync(logPath, { throwIfNoEntry: false })?.size === 0) await fsp.unlink(logPath);
      if (created.dir) await fsp.rmdir(path.dirname(logPath));
    } catch {
      // not empty after all (someone else wrote there): leave it
    }
  };

  return {
    follow,
    beforeStart(containerId, logPath, tty, info) {
      const jsonPath =
        opts.positions && !followers.has(containerId)
          ? jsonFileBeforeStart(containerId, info, opts.dockerRootDir?.())
          : undefined;
      if (!jsonPath)
        return async (started) => {
          if (started) follow(containerId, logPath, tty);
        };
      // what this call makes, so that a refused start takes away exactly that
      const created = { dir: !existsSync(path.dirname(logPath)), file: !existsSync(logPath) };
      const f = start(containerId, logPath, tty, jsonPath);
      return async (started) => {
        if (!f) return;
        if (started) f.started?.();
        else if (followers.get(containerId) === f) await abandon(containerId, f, logPath, created);
      };
    },
    reopen(containerId) {
      const f = followers.get(containerId);
      if (!f) return false;
      // before the file is open there is nothing to reopen: it will be opened at the new path
      f.follower?.file?.reopen();
      return true;
    },
    stop,
    async remove(containerId) {
      // a save still in flight may land after this; the next start-up prunes it
      stop(containerId);
      await opts.positions?.remove(containerId);
    },
    async prune(keep) {
      if (!opts.positions) return;
      for (const id of await opts.positions.list())
        if (!keep.has(id) && !followers.has(id)) await opts.positions.remove(id);
    },
    async idle(containerId) {
      await followers.get(containerId)?.done;
    },
    async drained(containerId, timeoutMs) {
      const f = followers.get(containerId);
      if (!f) return;
      f.follower?.checkNow();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([f.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
    },
    closeAll() {
      for (const id of [...followers.keys()]) stop(id);
    },
  };
}
