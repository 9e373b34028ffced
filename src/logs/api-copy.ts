import { FrameParser } from '../docker/demux';
import { isDockerUnreachable } from '../docker/errors';
import { isNotFound } from '../errors';
import { CriLogFile, lastEntries } from '../logging/cri-log';
import type { Logger } from '../logging/logger';
import { rfc3339ToNanos } from '../time';
import { DOCKER_TIMESTAMP, splitRecord, TtyRecordParser, type RecordHandler } from './docker-frames';
import type { LogFollower } from './follower';

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

/** Docker's logs options as this copy sends them (`since` is seconds.nanos). */
export interface ApiLogsOptions {
  timestamps: true;
  since?: string;
}

export type LogsStream = NodeJS.ReadableStream & { destroy(): void };

/** What the copy needs of the container in Docker (dockerode's container, or a fake in tests). */
export interface ContainerLogsSource {
  /** The logs stream, followed until Docker ends it. */
  follow(opts: ApiLogsOptions): Promise<LogsStream>;
  /** Everything from `since` at once. */
  read(opts: ApiLogsOptions): Promise<Buffer>;
  /** Whether the container runs; rejects with Docker's errors (not found, unreachable). */
  running(): Promise<boolean>;
}

export interface ApiLogCopyOptions {
  source: ContainerLogsSource;
  logPath: string;
  tty: boolean;
  log: Logger;
  /** First and longest wait between attempts while Docker is unreachable. */
  retryMinMs: number;
  retryMaxMs: number;
  /** Called in the same tick as the copy's last check, so a later follow() starts a new copy. */
  finished: () => void;
}

/**
 * The logs-API copy (a remote Docker, or a json-file not readable here): the logs stream with
 * timestamps, resumed after the last entry already in the CRI file, until the container has
 * exited and its output is drained; retried with backoff while Docker is unreachable.
 */
export class ApiLogCopy implements LogFollower {
  file: CriLogFile | undefined;
  private stopped = false;
  /** The container was started again meanwhile: copy another pass. */
  private kicked = false;
  private interruptWait: (() => void) | undefined;
  private resume = new ResumePoint(0n, 0);

  constructor(private readonly o: ApiLogCopyOptions) {}

  async run(): Promise<void> {
    try {
      this.file = new CriLogFile(this.o.logPath);
    } catch (err) {
      this.o.log.error('cannot open container log file', { logPath: this.o.logPath, error: (err as Error).message });
      this.o.finished();
      return;
    }
    const last = lastEntries(this.o.logPath);
    this.resume = new ResumePoint(last ? BigInt(rfc3339ToNanos(last.timestamp)) : 0n, last?.count ?? 0);
    return this.loop();
  }

  restart(): void {
    this.kicked = true;
  }

  /** Nothing to hurry: the stream delivers as Docker writes. */
  checkNow(): void {}

  stop(): void {
    this.stopped = true;
    this.interruptWait?.();
  }

  /** Copies until the container has exited and its output is drained, retrying while Docker is unreachable; then finished(). */
  private async loop(): Promise<void> {
    const { log, retryMinMs, retryMaxMs } = this.o;
    let delay = retryMinMs;
    const backoff = async (): Promise<void> => {
      await this.wait(delay);
      delay = Math.min(delay * 2, retryMaxMs);
    };
    let pending = true;
    let outage = false;
    while (!this.stopped) {
      try {
        const records = pending ? await this.copyPass() : 0;
        pending = false;
        const running = await this.o.source.running();
        if (outage) log.info('docker is reachable again; container log copy resumed');
        outage = false;
        if (!running && !this.kicked) {
          await this.finalPass();
          break;
        }
        // started again while we drained, or the stream ended early: copy again, pacing empty passes
        pending = true;
        if (records > 0 || this.kicked) delay = retryMinMs;
        else await backoff();
      } catch (err) {
        if (this.stopped || isNotFound(err)) break;
        if (!isDockerUnreachable(err)) {
          log.warn('cannot read container logs from docker', { error: (err as Error).message });
          break;
        }
        if (!outage)
          log.warn('docker is unreachable; retrying the container log copy', { error: (err as Error).message });
        outage = true;
        pending = true;
        await backoff();
      }
    }
    this.o.finished();
  }

  private readonly onRecord: RecordHandler = (stream, timestamp, message) => {
    if (!DOCKER_TIMESTAMP.test(timestamp)) {
      this.o.log.debug('dropping a log record without a timestamp', { timestamp: timestamp.slice(0, 40) });
      return;
    }
    if (this.stopped || !this.resume.accept(BigInt(rfc3339ToNanos(timestamp)))) return;
    try {
      this.file?.write(timestamp, stream, message);
    } catch (err) {
      // thrown from a stream event handler it would take the daemon down
      this.o.log.error('cannot write container log file', { logPath: this.o.logPath, error: (err as Error).message });
    }
  };

  /** A parser for this container's logs stream. */
  private recordParser(onRecord: RecordHandler): { push(chunk: Buffer): void; end(): void } {
    if (this.o.tty) return new TtyRecordParser(onRecord);
    const frames = new FrameParser((s, payload) => {
      const rec = splitRecord(payload);
      if (rec) onRecord(s === 'stderr' ? 'stderr' : 'stdout', rec.timestamp, rec.message);
    });
    return { push: (chunk) => frames.push(chunk), end: () => undefined };
  }

  /** Both streams with timestamps, from where the file ends (Docker's `since` takes seconds.nanos as a string). */
  private fromResumePoint(): ApiLogsOptions {
    const since = this.resume.begin();
    return { timestamps: true, ...(since ? { since } : {}) };
  }

  /** One logs request, followed until Docker ends it; resolves with the number of records seen. */
  private async copyPass(): Promise<number> {
    this.kicked = false;
    const stream = await this.o.source.follow(this.fromResumePoint());
    let records = 0;
    const parser = this.recordParser((s, ts, msg) => {
      records += 1;
      this.onRecord(s, ts, msg);
    });
    await new Promise<void>((resolve) => {
      this.interruptWait = () => stream.destroy();
      if (this.stopped) stream.destroy();
      stream.on('data', (chunk: Buffer) => parser.push(chunk));
      stream.on('end', () => parser.end());
      stream.on('end', resolve);
      stream.on('close', resolve);
      // whether Docker went away or the container stopped, the running check tells next
      stream.on('error', (err: Error) => {
        if (!this.stopped) this.o.log.debug('container log stream broke', { error: err.message });
        resolve();
      });
    });
    this.interruptWait = undefined;
    return records;
  }

  /**
   * A follow that ends as the container exits can miss the last record Docker flushes at
   * exit (a line without newline): one plain read after the exit picks it up, and the
   * resume point skips what was already written.
   */
  private async finalPass(): Promise<void> {
    const all = await this.o.source.read(this.fromResumePoint());
    const parser = this.recordParser(this.onRecord);
    parser.push(Buffer.isBuffer(all) ? all : Buffer.from(all));
    parser.end();
  }

  private wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const timer = setTimeout(resolve, ms);
      this.interruptWait = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
