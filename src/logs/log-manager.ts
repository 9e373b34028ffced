import { accessSync, closeSync, constants as fsConstants, lstatSync, readFileSync } from 'fs';
import type { DockerApi } from '../docker/client';
import { CriLogFile, lastEntries, truncateToMark, type LogStream } from '../logging/cri-log';
import type { Logger } from '../logging/logger';
import { openLogForAppend } from '../logging/safe-path';
import { shortId } from '../logging/logger';
import { startJsonFileCopy, type JsonFileCopy } from './json-file-copy';
import type { RecordFilter } from './json-file-records';
import type { LogPositionStore } from './log-positions';
import { isDockerNotFound, isDockerUnreachable } from '../docker/errors';
import { rfc3339ToNanos } from '../time';

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

/**
 * Docker's log copier (daemon/logger/copier.go, 16 KiB buffer for json-file) cuts a line
 * without newline into records of this many bytes; checked against Docker 20.10.
 */
export const DOCKER_PARTIAL_BYTES = 16 * 1024;

/** One json-file record as the logs API replays it with timestamps=true. */
export type RecordHandler = (stream: LogStream, timestamp: string, message: Buffer) => void;

/** Incremental parser of Docker's multiplexed stream: 8-byte header (stream, size) + payload. */
export class FrameParser {
  private buf: Buffer = Buffer.alloc(0);
  constructor(private readonly onFrame: (stream: LogStream, payload: Buffer) => void) {}
  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 8) {
      const size = this.buf.readUInt32BE(4);
      if (this.buf.length < 8 + size) break;
      const stream: LogStream = this.buf[0] === 2 ? 'stderr' : 'stdout';
      this.onFrame(stream, this.buf.subarray(8, 8 + size));
      this.buf = this.buf.subarray(8 + size);
    }
  }
}

/** Splits one frame's "<timestamp> <message>" (a whole record: Docker writes one frame per record). */
export function splitRecord(payload: Buffer): { timestamp: string; message: Buffer } | undefined {
  const sp = payload.indexOf(0x20);
  if (sp <= 0) return undefined;
  return { timestamp: payload.subarray(0, sp).toString('latin1'), message: payload.subarray(sp + 1) };
}

/**
 * Parser of the logs stream of a tty container, which has no framing: each record is
 * "<timestamp> <message>" and a partial record (a line cut at 16 KiB, or the rest flushed
 * when the container exits) has no newline. So a message ends after its newline or after
 * DOCKER_PARTIAL_BYTES bytes, whichever comes first.
 */
export class TtyRecordParser {
  private tsParts: Buffer[] = [];
  private timestamp: string | undefined;
  private msgParts: Buffer[] = [];
  private msgLen = 0;

  constructor(
    private readonly onRecord: RecordHandler,
    private readonly maxMessage = DOCKER_PARTIAL_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) i = this.timestamp === undefined ? this.readTimestamp(chunk, i) : this.readMessage(chunk, i);
  }

  /** The stream ended: what is left is the last record. */
  end(): void {
    if (this.timestamp !== undefined && this.msgLen > 0) this.emit();
    this.timestamp = undefined;
    this.tsParts = [];
  }

  private readTimestamp(chunk: Buffer, from: number): number {
    const sp = chunk.indexOf(0x20, from);
    if (sp < 0) {
      this.tsParts.push(chunk.subarray(from));
      return chunk.length;
    }
    this.tsParts.push(chunk.subarray(from, sp));
    this.timestamp = Buffer.concat(this.tsParts).toString('latin1');
    this.tsParts = [];
    return sp + 1;
  }

  private readMessage(chunk: Buffer, from: number): number {
    const limit = Math.min(chunk.length, from + this.maxMessage - this.msgLen);
    const nl = chunk.indexOf(0x0a, from);
    const stop = nl >= 0 && nl < limit ? nl + 1 : limit;
    this.msgParts.push(chunk.subarray(from, stop));
    this.msgLen += stop - from;
    if (stop === nl + 1 || this.msgLen >= this.maxMessage) this.emit();
    return stop;
  }

  private emit(): void {
    const message = Buffer.concat(this.msgParts, this.msgLen);
    const timestamp = this.timestamp ?? '';
    this.timestamp = undefined;
    this.msgParts = [];
    this.msgLen = 0;
    this.onRecord('stdout', timestamp, message);
  }
}

const DOCKER_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;

/**
 * Where copying resumes: everything up to `ns` is in the file, `seen` of those entries
 * carry exactly `ns` (Docker gives all pieces of a cut line the first piece's time), and
 * Docker's inclusive `since` replays them, so that many are skipped again.
 */
class ResumePoint {
  private since = 0n;
  private skip = 0;
  constructor(
    private ns: bigint,
    private seen: number,
  ) {}

  /** Before each pass: the `since` value for Docker. */
  begin(): string | undefined {
    this.since = this.ns;
    this.skip = this.seen;
    if (this.ns <= 0n) return undefined;
    return `${this.ns / 1_000_000_000n}.${(this.ns % 1_000_000_000n).toString().padStart(9, '0')}`;
  }

  /** True when the record is new and must be written. */
  accept(ns: bigint): boolean {
    // only the replay is filtered: stdout and stderr records may come slightly out of order
    if (ns < this.since) return false;
    if (ns === this.since && this.skip > 0) {
      this.skip -= 1;
      return false;
    }
    if (ns === this.ns) this.seen += 1;
    else if (ns > this.ns) {
      this.ns = ns;
      this.seen = 1;
    }
    return true;
  }
}

interface Follower {
  /** Opened once the mode is known (the local mode first cuts the file back to its saved size). */
  file?: CriLogFile;
  /** The local copy, when this follower reads the json-file itself. */
  copy?: JsonFileCopy;
  done: Promise<void>;
  /** Aborts the current stream or wait. */
  interrupt: () => void;
  stopped: boolean;
  /** follow() was called again meanwhile (the container may have been started again). */
  kicked: boolean;
}

type LogsStream = NodeJS.ReadableStream & { destroy(): void };

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

  /** The logs-API copy (remote Docker, or a json-file not readable here). */
  const copyThroughApi = (containerId: string, logPath: string, tty: boolean, log: Logger, f: Follower): Promise<void> => {
    let file: CriLogFile;
    try {
      file = new CriLogFile(logPath);
    } catch (err) {
      log.error('cannot open container log file', { logPath, error: (err as Error).message });
      finish(containerId, f);
      return Promise.resolve();
    }
    f.file = file;
    const last = lastEntries(logPath);
    const resume = new ResumePoint(last ? BigInt(rfc3339ToNanos(last.timestamp)) : 0n, last?.count ?? 0);
    let interruptWait: (() => void) | undefined;
    f.interrupt = () => interruptWait?.();

    const onRecord: RecordHandler = (stream, timestamp, message) => {
      if (!DOCKER_TIMESTAMP.test(timestamp)) {
        log.debug('dropping a log record without a timestamp', { timestamp: timestamp.slice(0, 40) });
        return;
      }
      if (f.stopped || !resume.accept(BigInt(rfc3339ToNanos(timestamp)))) return;
      try {
        file.write(timestamp, stream, message);
      } catch (err) {
        // thrown from a stream event handler it would take the daemon down
        log.error('cannot write container log file', { logPath, error: (err as Error).message });
      }
    };

    /** A parser for this container's logs stream that counts the records it hands on. */
    const recordParser = (onRecordCounted: RecordHandler): { push(chunk: Buffer): void; end(): void } => {
      if (tty) return new TtyRecordParser(onRecordCounted);
      const frames = new FrameParser((s, payload) => {
        const rec = splitRecord(payload);
        if (rec) onRecordCounted(s, rec.timestamp, rec.message);
      });
      return { push: (chunk) => frames.push(chunk), end: () => undefined };
    };

    /** Both streams with timestamps, from where the file ends (Docker's `since` takes seconds.nanos as a string). */
    const fromResumePoint = (): { stdout: true; stderr: true; timestamps: true; since?: number } => {
      const since = resume.begin();
      return { stdout: true, stderr: true, timestamps: true, ...(since ? { since: since as unknown as number } : {}) };
    };

    /** One logs request, followed until Docker ends it; resolves with the number of records seen. */
    const copyPass = async (): Promise<number> => {
      f.kicked = false;
      const stream = (await docker.getContainer(containerId).logs({ ...fromResumePoint(), follow: true })) as unknown as LogsStream;
      let records = 0;
      const parser = recordParser((s, ts, msg) => {
        records += 1;
        onRecord(s, ts, msg);
      });
      await new Promise<void>((resolve) => {
        interruptWait = () => stream.destroy();
        if (f.stopped) stream.destroy();
        stream.on('data', (chunk: Buffer) => parser.push(chunk));
        stream.on('end', () => parser.end());
        stream.on('end', resolve);
        stream.on('close', resolve);
        // whether Docker went away or the container stopped, inspect tells next
        stream.on('error', (err: Error) => {
          if (!f.stopped) log.debug('container log stream broke', { error: err.message });
          resolve();
        });
      });
      interruptWait = undefined;
      return records;
    };

    /**
     * A follow that ends as the container exits can miss the last record Docker flushes at
     * exit (a line without newline): one plain read after the exit picks it up, and the
     * resume point skips what was already written.
     */
    const finalPass = async (): Promise<void> => {
      const all = (await docker.getContainer(containerId).logs({ ...fromResumePoint(), follow: false })) as Buffer;
      const parser = recordParser(onRecord);
      parser.push(Buffer.isBuffer(all) ? all : Buffer.from(all));
      parser.end();
    };

    const wait = (ms: number): Promise<void> =>
      new Promise((resolve) => {
        if (f.stopped) return resolve();
        const timer = setTimeout(resolve, ms);
        interruptWait = () => {
          clearTimeout(timer);
          resolve();
        };
      });

    /** Copies until the container has exited and its output is drained, retrying while Docker is unreachable. */
    const run = async (): Promise<void> => {
      let delay = retryMinMs;
      const backoff = async (): Promise<void> => {
        await wait(delay);
        delay = Math.min(delay * 2, retryMaxMs);
      };
      let pending = true;
      let outage = false;
      while (!f.stopped) {
        try {
          const records = pending ? await copyPass() : 0;
          pending = false;
          const info = await docker.getContainer(containerId).inspect();
          if (outage) log.info('docker is reachable again; container log copy resumed');
          outage = false;
          if (!info.State.Running && !f.kicked) {
            await finalPass();
            break;
          }
          // started again while we drained, or the stream ended early: copy again, pacing empty passes
          pending = true;
          if (records > 0 || f.kicked) delay = retryMinMs;
          else await backoff();
        } catch (err) {
          if (f.stopped || isDockerNotFound(err)) break;
          if (!isDockerUnreachable(err)) {
            log.warn('cannot read container logs from docker', { error: (err as Error).message });
            break;
          }
          if (!outage) log.warn('docker is unreachable; retrying the container log copy', { error: (err as Error).message });
          outage = true;
          pending = true;
          await backoff();
        }
      }
      finish(containerId, f);
    };

    return run();
  };

  /** Ends a follower; called in the same tick as the last check, so any later follow() starts a new one. */
  const finish = (containerId: string, f: Follower): void => {
    f.file?.close();
    if (followers.get(containerId) === f) followers.delete(containerId);
  };

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
      else await copyThroughApi(containerId, logPath, tty, log, f);
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
