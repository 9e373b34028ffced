import { setImmediate as yieldNow } from 'timers/promises';
import type { CriLogFile } from '../logging/cri-log';
import type { Logger } from '../logging/logger';
import { dirname } from 'path';
import { JsonFileFollower, type LogLoss } from './json-file-follower';
import { watchLogDir } from './log-dir-watch';
import { convertJsonLines, type RecordFilter } from './json-file-records';
import type { LogPosition, LogPositionStore } from './log-positions';

/**
 * The copy loop for a container whose json-file is readable here: Docker's file -> CRI file,
 * one bounded chunk at a time. Each chunk's CRI write is awaited before the next read (so a
 * slow disk slows the copy, not memory), the loop yields to the event loop between chunks (so
 * a chatty container leaves room for the others and for RPCs), and the position is saved
 * after the write it describes (see log-positions.ts for why that makes restarts exact).
 */
export interface JsonFileCopyOptions {
  containerId: string;
  jsonPath: string;
  file: CriLogFile;
  positions: LogPositionStore;
  /** Where the last run stopped; undefined for a container copied for the first time. */
  saved?: LogPosition;
  /** Drops records already in the CRI file when there is no saved position (a file from before positions existed). */
  skip?: RecordFilter;
  /** False once Docker says the container is not running; undefined when Docker cannot say. */
  isRunning: () => Promise<boolean | undefined>;
  log: Logger;
  /**
   * Poll interval while idle: doubles from min, back to min when output comes; at most
   * `pauseMaxMs` during the first two seconds of a pause (a busy writer stalls briefly under
   * load and should not be read late for it), at most `idleMaxMs` after.
   */
  idleMinMs?: number;
  pauseMaxMs?: number;
  idleMaxMs?: number;
  /**
   * Poll interval while idle when changes to the container's directory wake the loop: only the
   * safety net, since Docker writes there (config.v2.json) when the container stops, too, and an
   * exited container's ContainerStatus drains its copy first. Each wake costs a read, a stat and a
   * look at the process table: every 5 s at 110 idle containers that was 1.3 % of a core, more than
   * the rest of a kubelet's polling (docs/how-it-works.md, "Container logs").
   */
  watchedIdleMs?: number;
  /** How often an idle copy asks Docker whether the container still runs (unwatched; watched, at every idle wake). */
  exitCheckMs?: number;
  /** Least time between two position saves while copying steadily. */
  saveEveryMs?: number;
  chunkBytes?: number;
}

export interface JsonFileCopy {
  readonly done: Promise<void>;
  /**
   * The container was started again: keep copying even if it had exited. False when this
   * copy has already decided to end (the caller starts another one).
   */
  kick(): boolean;
  stop(): void;
}

export function startJsonFileCopy(o: JsonFileCopyOptions): JsonFileCopy {
  const idleMinMs = o.idleMinMs ?? 10;
  const pauseMaxMs = o.pauseMaxMs ?? 40;
  const idleMaxMs = o.idleMaxMs ?? 250;
  const watchedIdleMs = o.watchedIdleMs ?? 60_000;
  const exitCheckMs = o.exitCheckMs ?? 1000;
  const saveEveryMs = o.saveEveryMs ?? 100;
  let stopped = false;
  /** Starts seen (kick()), and how many of them a check of the container's state has answered. */
  let kicks = 0;
  let kicksChecked = 0;
  let ended = false;
  let wake: (() => void) | undefined;
  let lossReported = false;
  let badReported = false;

  const reportLoss = (loss: LogLoss): void => {
    // once per container: a copy that keeps falling behind would otherwise flood the log
    if (lossReported) return;
    lossReported = true;
    o.log.warn('container log lines were lost before they could be copied', {
      jsonPath: o.jsonPath,
      lostFilesAtLeast: loss.files,
      lostBytesAtLeast: loss.bytes,
      reason: loss.reason,
    });
  };

  const follower = new JsonFileFollower(o.jsonPath, {
    chunkBytes: o.chunkBytes,
    onLoss: reportLoss,
    onSkippedTail: (bytes) =>
      o.log.warn('skipped an unterminated line at the end of a rotated json-file', { jsonPath: o.jsonPath, bytes }),
  });

  let savedGen = o.file.generation();
  let lastSave = 0;
  let dirty = false;
  const save = async (): Promise<void> => {
    const source = await follower.position();
    if (!source || stopped) return;
    savedGen = o.file.generation();
    lastSave = Date.now();
    dirty = false;
    await o.positions.save(o.containerId, { version: 1, source, cri: o.file.mark() }).catch((err: Error) => {
      o.log.warn('cannot save the container log position', { error: err.message });
    });
  };

  /** Copies one chunk if there is one; false when caught up. */
  const copyOne = async (): Promise<boolean> => {
    const chunk = await follower.next();
    if (!chunk || stopped) return false;
    const out = convertJsonLines(chunk.data, o.skip);
    if (out.bad > 0 && !badReported) {
      badReported = true;
      o.log.warn('json-file lines that are not log records were skipped', {
        jsonPath: o.jsonPath,
        lines: out.bad,
        offset: chunk.offset,
      });
    }
    // after a ReopenContainerLog, pin the new file at its start before anything lands in it
    if (o.file.generation() !== savedGen) await save();
    await o.file.append(out.cri);
    dirty = true;
    if (Date.now() - lastSave >= saveEveryMs) await save();
    return true;
  };

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });

  /**
   * Asks whether the container still runs without holding up the copy: the answer can take a
   * Docker round trip, hundreds of ms on a loaded host, and a writer caught up with for a
   * moment goes on writing (and Docker rotating) meanwhile. "Not running" counts only when no
   * start (kick) came while asking.
   */
  let exited = false;
  let asking = false;
  const checkRunning = (): void => {
    asking = true;
    kicksChecked = kicks;
    void o
      .isRunning()
      .catch(() => undefined)
      .then((running) => {
        if (running === false && kicks === kicksChecked) {
          exited = true;
          wake?.();
        }
      })
      .finally(() => {
        asking = false;
        // a start that came while asking is checked again
        if (kicks !== kicksChecked) wake?.();
      });
  };

  const run = async (): Promise<void> => {
    await follower.start(o.saved?.source);
    if (o.saved)
      o.log.debug('container log copy resumes at its saved position', {
        jsonPath: o.jsonPath,
        ino: o.saved.source.ino,
        offset: o.saved.source.offset,
      });
    let idle = idleMinMs;
    let idleSince = 0;
    let lastCheck = Date.now();
    while (!stopped) {
      changed = false;
      if (await copyOne()) {
        idle = idleMinMs;
        idleSince = 0;
        await yieldNow();
        continue;
      }
      idleSince ||= Date.now();
      if (stopped) break;
      if (dirty) await save();
      if (exited) {
        ended = true;
        // Docker flushed the last records before marking the container exited: drain them
        while (!stopped && (await copyOne())) await yieldNow();
        if (dirty) await save();
        break;
      }
      // watched, an idle wake is rare and often the container's own state change: check each time
      if (!asking && (kicks !== kicksChecked || watcher || Date.now() - lastCheck >= exitCheckMs)) {
        lastCheck = Date.now();
        checkRunning();
      }
      // a write that landed after the read found nothing: look again rather than sleep through it
      if (changed) continue;
      await sleep(watcher ? watchedIdleMs : idle);
      idle = Math.min(idle * 2, Date.now() - idleSince < 2000 ? pauseMaxMs : idleMaxMs);
    }
  };
  let changed = false;
  const watcher = watchLogDir(dirname(o.jsonPath), () => {
    changed = true;
    wake?.();
    follower.hold();
  });

  const done = run()
    .finally(() => (ended = true))
    .catch((err: Error) => {
      o.log.error('container log copy failed', { jsonPath: o.jsonPath, error: err.message });
    })
    .finally(() => {
      watcher?.close();
      return follower.close();
    });

  return {
    done,
    kick() {
      if (ended) return false;
      kicks += 1;
      exited = false;
      wake?.();
      return true;
    },
    stop() {
      stopped = true;
      wake?.();
    },
  };
}
