import { lstatSync } from 'fs';
import type { DockerApi } from '../docker/client';
import { CriLogFile, lastTimestamp, type LogStream } from '../logging/cri-log';
import type { Logger } from '../logging/logger';
import { shortId } from '../logging/logger';
import { rfc3339ToNanos } from './time';

/**
 * Copies each container's output from Docker (json-file driver, read through the
 * logs API with timestamps) into its CRI log file. One follower per container;
 * it resumes after the last entry already in the file, so a daemon restart or a
 * container restart appends without loss or duplicates.
 */
export interface LogManager {
  /** Starts copying (no-op when already copying). */
  follow(containerId: string, logPath: string, tty: boolean): void;
  /** Reopens the file after the kubelet rotated it; false when nothing copies for this container. */
  reopen(containerId: string): boolean;
  /** Stops copying (container removed). */
  stop(containerId: string): void;
  /** Resolves when the follower for a container has drained (tests, shutdown). */
  idle(containerId: string): Promise<void>;
  closeAll(): void;
}

interface Follower {
  file: CriLogFile;
  done: Promise<void>;
  destroy: () => void;
  stopped: boolean;
}

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

/** Splits "<timestamp> <message>" as the logs API sends it with timestamps=true. */
export function splitTimestamp(text: string): { ts: string; message: string } | undefined {
  const sp = text.indexOf(' ');
  if (sp <= 0) return undefined;
  return { ts: text.slice(0, sp), message: text.slice(sp + 1) };
}

function sinceParam(ts: string | undefined): string | undefined {
  if (!ts) return undefined;
  const ns = BigInt(rfc3339ToNanos(ts));
  if (ns === 0n) return undefined;
  return `${ns / 1_000_000_000n}.${(ns % 1_000_000_000n).toString().padStart(9, '0')}`;
}

export function createLogManager(docker: DockerApi, logger: Logger): LogManager {
  const followers = new Map<string, Follower>();

  const start = (containerId: string, logPath: string, tty: boolean): void => {
    const log = logger.child({ containerId: shortId(containerId) });
    // a symlink here is cri-dockerd's link to Docker's own json log: never write through it
    if (lstatSync(logPath, { throwIfNoEntry: false })?.isSymbolicLink()) {
      log.info('container log path is a symlink (cri-dockerd container); not copying logs', { logPath });
      return;
    }
    let file: CriLogFile;
    try {
      file = new CriLogFile(logPath);
    } catch (err) {
      log.error('cannot open container log file', { logPath, error: (err as Error).message });
      return;
    }
    const lastTs = lastTimestamp(logPath);
    const lastNs = lastTs ? BigInt(rfc3339ToNanos(lastTs)) : -1n;
    let destroyStream: (() => void) | undefined;
    const f: Follower = { file, stopped: false, destroy: () => destroyStream?.(), done: Promise.resolve() };

    const write = (stream: LogStream, text: string): void => {
      const parts = splitTimestamp(text);
      if (!parts) return;
      // `since` is inclusive: skip what the file already holds
      if (lastNs >= 0n && BigInt(rfc3339ToNanos(parts.ts)) <= lastNs) return;
      f.file.write(parts.ts, stream, parts.message);
    };

    f.done = (async () => {
      const stream = (await docker.getContainer(containerId).logs({
        follow: true,
        stdout: true,
        stderr: true,
        timestamps: true,
        since: sinceParam(lastTs) as unknown as number,
      })) as unknown as NodeJS.ReadableStream & { destroy(): void };
      destroyStream = () => stream.destroy();
      if (f.stopped) stream.destroy();
      await new Promise<void>((resolve) => {
        if (tty) {
          let pending = '';
          stream.on('data', (chunk: Buffer) => {
            pending += chunk.toString('utf8');
            let nl: number;
            while ((nl = pending.indexOf('\n')) >= 0) {
              write('stdout', pending.slice(0, nl + 1));
              pending = pending.slice(nl + 1);
            }
          });
          stream.on('end', () => {
            if (pending) write('stdout', pending);
          });
        } else {
          const parser = new FrameParser((s, payload) => write(s, payload.toString('utf8')));
          stream.on('data', (chunk: Buffer) => parser.push(chunk));
        }
        stream.on('end', resolve);
        stream.on('close', resolve);
        stream.on('error', (err: Error) => {
          if (!f.stopped) log.warn('container log stream failed', { error: err.message });
          resolve();
        });
      });
    })()
      .catch((err: unknown) => {
        if (!f.stopped) log.warn('cannot read container logs from docker', { error: (err as Error).message });
      })
      .finally(async () => {
        f.file.close();
        if (followers.get(containerId) === f) followers.delete(containerId);
        if (f.stopped) return;
        // the container may have been started again while we drained: keep copying
        try {
          const info = await docker.getContainer(containerId).inspect();
          if (info.State.Running && !followers.has(containerId)) start(containerId, logPath, tty);
        } catch {
          /* removed meanwhile */
        }
      });
    followers.set(containerId, f);
  };

  return {
    follow(containerId, logPath, tty) {
      if (!followers.has(containerId)) start(containerId, logPath, tty);
    },
    reopen(containerId) {
      const f = followers.get(containerId);
      if (!f) return false;
      f.file.reopen();
      return true;
    },
    stop(containerId) {
      const f = followers.get(containerId);
      if (!f) return;
      f.stopped = true;
      f.destroy();
      f.file.close();
      followers.delete(containerId);
    },
    async idle(containerId) {
      await followers.get(containerId)?.done;
    },
    closeAll() {
      for (const id of [...followers.keys()]) this.stop(id);
    },
  };
}
