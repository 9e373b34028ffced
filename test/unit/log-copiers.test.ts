/**
 * The log manager's units one by one with fakes of Docker: the logs-API copy, the local
 * json-file copy's restart and running checks, and finding the json-file.
 */
import { fromDockerError } from '../../src/docker/errors';
import { promises as fsp, readFileSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import winston from 'winston';
import { ApiLogCopy, type ApiLogsOptions, type ContainerLogsSource, type LogsStream } from '../../src/logs/api-copy';
import type { JsonFileCopy, JsonFileCopyOptions } from '../../src/logs/json-file-copy';
import { locateJsonFile } from '../../src/logs/json-file-locator';
import { LocalLogCopy } from '../../src/logs/local-copy';
import type { LogPosition, LogPositionStore } from '../../src/logs/log-positions';
import { criLines } from '../../src/logging/cri-log';

const quiet = winston.createLogger({ silent: true });
const T1 = '2026-11-22T19:12:10.000000001Z';
const T2 = '2026-11-22T19:12:11.000000002Z';
const T3 = '2026-11-22T19:12:12.000000003Z';

/** Docker's multiplexed frame of one "<ts> <message>" record. */
function frame(stream: 1 | 2, ts: string, msg: string): Buffer {
  const payload = Buffer.from(`${ts} ${msg}`);
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(payload.length, 4);
  return Buffer.concat([h, payload]);
}
// what the engine throws: Docker's errors mapped to domain errors
const unreachable = (): Error =>
  fromDockerError(Object.assign(new Error('connect ECONNREFUSED /var/run/docker.sock'), { code: 'ECONNREFUSED' }));
const notFound = (): Error => fromDockerError(Object.assign(new Error('no such container'), { statusCode: 404 }));

let dir: string;
beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-copiers-'));
});
afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

describe('ApiLogCopy', () => {
  /** A container whose follow passes and running answers are scripted in order. */
  function source(passes: Buffer[][], running: Array<boolean | Error>, final: Buffer = Buffer.alloc(0)) {
    const calls: string[] = [];
    const src: ContainerLogsSource = {
      async follow(o: ApiLogsOptions): Promise<LogsStream> {
        calls.push(`follow since=${o.since ?? '-'}`);
        const s = new PassThrough();
        for (const chunk of passes.shift() ?? []) s.write(chunk);
        s.end();
        return s;
      },
      async read(o) {
        calls.push(`read since=${o.since ?? '-'}`);
        return final;
      },
      async running() {
        const r = running.shift() ?? false;
        calls.push(`running ${r instanceof Error ? r.message : r}`);
        if (r instanceof Error) throw r;
        return r;
      },
    };
    return { src, calls };
  }
  const make = (src: ContainerLogsSource, logPath: string, finished = jest.fn()) => ({
    copy: new ApiLogCopy({ source: src, logPath, tty: false, log: quiet, retryMinMs: 1, retryMaxMs: 4, finished }),
    finished,
  });

  it('copies both streams, then after the exit reads once more for the last record; finished once', async () => {
    const logPath = path.join(dir, 'c.log');
    const { src, calls } = source([[frame(1, T1, 'one\n'), frame(2, T2, 'two\n')]], [false], frame(1, T2, 'two\n'));
    const { copy, finished } = make(src, logPath);
    await copy.run();
    expect(readFileSync(logPath, 'utf8')).toBe(criLines(T1, 'stdout', 'one\n') + criLines(T2, 'stderr', 'two\n'));
    expect(calls).toEqual(['follow since=-', 'running false', 'read since=1795374731.000000002']);
    expect(finished).toHaveBeenCalledTimes(1);
  });

  it('resumes after the last entry already in the file, skipping what Docker replays', async () => {
    const logPath = path.join(dir, 'c.log');
    await fsp.writeFile(logPath, criLines(T1, 'stdout', 'old\n'));
    const { src, calls } = source([[frame(1, T1, 'old\n'), frame(1, T3, 'new\n')]], [false]);
    await make(src, logPath).copy.run();
    expect(calls[0]).toBe('follow since=1795374730.000000001');
    expect(readFileSync(logPath, 'utf8')).toBe(criLines(T1, 'stdout', 'old\n') + criLines(T3, 'stdout', 'new\n'));
  });

  it('retries while Docker is unreachable, copies again while the container runs, ends on not found', async () => {
    const logPath = path.join(dir, 'c.log');
    const { src, calls } = source(
      [[frame(1, T1, 'a\n')], [], [frame(1, T2, 'b\n')]],
      [unreachable(), true, notFound()],
    );
    const { copy, finished } = make(src, logPath);
    await copy.run();
    expect(calls).toEqual([
      'follow since=-',
      'running docker daemon unreachable (ECONNREFUSED): connect ECONNREFUSED /var/run/docker.sock',
      'follow since=1795374730.000000001',
      'running true',
      'follow since=1795374730.000000001',
      'running no such container',
    ]);
    expect(readFileSync(logPath, 'utf8')).toBe(criLines(T1, 'stdout', 'a\n') + criLines(T2, 'stdout', 'b\n'));
    expect(finished).toHaveBeenCalledTimes(1);
  });

  it('stop ends a copy waiting out a backoff at once', async () => {
    const { src } = source([], [unreachable(), unreachable(), unreachable()]);
    const copy = new ApiLogCopy({
      source: src,
      logPath: path.join(dir, 'c.log'),
      tty: false,
      log: quiet,
      retryMinMs: 60_000,
      retryMaxMs: 60_000,
      finished: () => undefined,
    });
    const done = copy.run();
    await new Promise((r) => setTimeout(r, 20));
    copy.stop();
    await done; // would hang for a minute without the interrupt
  });

  it('a CRI file that cannot be opened ends the copy before any Docker call', async () => {
    const { src, calls } = source([], []);
    await fsp.writeFile(path.join(dir, 'not-a-dir'), '');
    const { copy, finished } = make(src, path.join(dir, 'not-a-dir', 'c.log'));
    await copy.run();
    expect(calls).toEqual([]);
    expect(finished).toHaveBeenCalledTimes(1);
  });
});

describe('LocalLogCopy', () => {
  function positions(saved?: LogPosition): LogPositionStore & { loads: number } {
    const store = {
      loads: 0,
      load: () => {
        store.loads += 1;
        return saved;
      },
    };
    return store as unknown as LogPositionStore & { loads: number };
  }
  /** Scripted copies: each resolves when the test says, its kick() answers as told. */
  function copies(kickAnswers: boolean[]) {
    const started: JsonFileCopyOptions[] = [];
    const ends: Array<() => void> = [];
    let stops = 0;
    const start = (o: JsonFileCopyOptions): JsonFileCopy => {
      started.push(o);
      let end: () => void = () => undefined;
      const done = new Promise<void>((r) => (end = r));
      ends.push(end);
      return { done, kick: () => kickAnswers.shift() ?? true, stop: () => (stops += 1) };
    };
    return { start, started, end: (i: number) => ends[i](), stops: () => stops };
  }
  const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

  it('a restart the running copy can no longer take starts another copy from the saved position', async () => {
    const c = copies([false]);
    const pos = positions();
    const finished = jest.fn();
    const copy = new LocalLogCopy({
      containerId: 'c1',
      logPath: path.join(dir, 'c.log'),
      jsonPath: '/x-json.log',
      positions: pos,
      log: quiet,
      inspectState: async () => ({ Running: false, Pid: 0 }),
      finished,
      startCopy: c.start,
    });
    const done = copy.run();
    await tick();
    copy.restart(); // kick() answers false: this copy is ending
    c.end(0);
    await tick();
    expect(c.started).toHaveLength(2);
    expect(pos.loads).toBe(2);
    copy.restart(); // kick() answers true: the running copy goes on
    c.end(1);
    await done;
    expect(c.started).toHaveLength(2);
    expect(finished).toHaveBeenCalledTimes(1);
  });

  it('"still running?" asks Docker once while the same main process lives', async () => {
    const c = copies([]);
    let inspects = 0;
    let startTime = '100';
    const copy = new LocalLogCopy({
      containerId: 'c1',
      logPath: path.join(dir, 'c.log'),
      jsonPath: '/x-json.log',
      positions: positions(),
      log: quiet,
      inspectState: async () => {
        inspects += 1;
        return { Running: true, Pid: 42 };
      },
      processStart: (pid) => (pid === 42 ? startTime : undefined),
      finished: () => undefined,
      startCopy: c.start,
    });
    const done = copy.run();
    await tick();
    const isRunning = c.started[0].isRunning;
    expect(await isRunning()).toBe(true);
    expect(await isRunning()).toBe(true);
    expect(inspects).toBe(1);
    startTime = '200'; // pid 42 reused by another process
    expect(await isRunning()).toBe(true);
    expect(inspects).toBe(2);
    copy.stop();
    expect(c.stops()).toBe(1);
    c.end(0);
    await done;
  });

  it('Docker saying not found means not running; Docker unreachable means unknown', async () => {
    const c = copies([]);
    const answers = [notFound(), unreachable()];
    const copy = new LocalLogCopy({
      containerId: 'c1',
      logPath: path.join(dir, 'c.log'),
      jsonPath: '/x',
      positions: positions(),
      log: quiet,
      inspectState: async () => Promise.reject(answers.shift()),
      finished: () => undefined,
      startCopy: c.start,
    });
    const done = copy.run();
    await tick();
    expect(await c.started[0].isRunning()).toBe(false);
    expect(await c.started[0].isRunning()).toBeUndefined();
    c.end(0);
    await done;
  });
});

describe('locateJsonFile', () => {
  const info = (over: Record<string, unknown> = {}) => ({
    LogPath: '/var/lib/docker/containers/c/c-json.log',
    HostConfig: { LogConfig: { Type: 'json-file', Config: {} } },
    ...over,
  });
  it('gives the readable plain json-file, else undefined with the reason logged', async () => {
    const warned: unknown[] = [];
    const log = { warn: (_m: string, meta: unknown) => warned.push(meta) } as unknown as winston.Logger;
    const ok = () => undefined;
    expect(await locateJsonFile(async () => info(), log, ok)).toBe('/var/lib/docker/containers/c/c-json.log');
    expect(await locateJsonFile(async () => info({ LogPath: '' }), log, ok)).toBeUndefined();
    expect(
      await locateJsonFile(async () => info({ HostConfig: { LogConfig: { Type: 'journald' } } }), log, ok),
    ).toBeUndefined();
    expect(
      await locateJsonFile(
        async () => info({ HostConfig: { LogConfig: { Type: 'json-file', Config: { compress: 'true' } } } }),
        log,
        ok,
      ),
    ).toBeUndefined();
    const denied = () => {
      throw new Error('EACCES: permission denied');
    };
    expect(await locateJsonFile(async () => info(), log, denied)).toBeUndefined();
    expect(warned).toEqual([
      { reason: 'docker reports no json-file for it' },
      { reason: 'its log driver is journald' },
      { reason: 'its rotated json-files are compressed' },
      { reason: 'EACCES: permission denied' },
    ]);
  });
});
