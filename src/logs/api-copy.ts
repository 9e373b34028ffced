import type { DockerApi } from '../docker/client';
import { CriLogFile, lastEntries } from '../logging/cri-log';
import type { Logger } from '../logging/logger';
import { isDockerNotFound, isDockerUnreachable } from '../docker/errors';
import { rfc3339ToNanos } from '../time';
import type { Follower } from './follower';
import { DOCKER_TIMESTAMP, FrameParser, splitRecord, TtyRecordParser, type RecordHandler } from './docker-frames';

/** What the logs-API copy needs from its log manager. */
export interface ApiCopyEnv {
  docker: DockerApi;
  /** First and longest wait between attempts while Docker is unreachable. */
  retryMinMs: number;
  retryMaxMs: number;
  /** Ends the follower (closes its file, forgets it). */
  finish(containerId: string, f: Follower): void;
}

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

type LogsStream = NodeJS.ReadableStream & { destroy(): void };

/** The logs-API copy (remote Docker, or a json-file not readable here). */
export function copyThroughApi(env: ApiCopyEnv, containerId: string, logPath: string, tty: boolean, log: Logger, f: Follower): Promise<void> {
  let file: CriLogFile;
  try {
    file = new CriLogFile(logPath);
  } catch (err) {
    log.error('cannot open container log file', { logPath, error: (err as Error).message });
    env.finish(containerId, f);
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
    const stream = (await env.docker.getContainer(containerId).logs({ ...fromResumePoint(), follow: true })) as unknown as LogsStream;
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
    const all = (await env.docker.getContainer(containerId).logs({ ...fromResumePoint(), follow: false })) as Buffer;
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
    let delay = env.retryMinMs;
    const backoff = async (): Promise<void> => {
      await wait(delay);
      delay = Math.min(delay * 2, env.retryMaxMs);
    };
    let pending = true;
    let outage = false;
    while (!f.stopped) {
      try {
        const records = pending ? await copyPass() : 0;
        pending = false;
        const info = await env.docker.getContainer(containerId).inspect();
        if (outage) log.info('docker is reachable again; container log copy resumed');
        outage = false;
        if (!info.State.Running && !f.kicked) {
          await finalPass();
          break;
        }
        // started again while we drained, or the stream ended early: copy again, pacing empty passes
        pending = true;
        if (records > 0 || f.kicked) delay = env.retryMinMs;
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
    env.finish(containerId, f);
  };

  return run();
}
