import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import winston from 'winston';
import { fromDockerError } from '../../src/docker/errors';
import { FakeEngine, inspectInfo } from '../support/fake-engine';
import { createLogManager, type LogManager } from '../../src/logs/log-manager';
import { DOCKER_PARTIAL_BYTES, TtyRecordParser } from '../../src/logs/docker-frames';
import { criLines } from '../../src/logging/cri-log';

const T1 = '2026-11-22T19:12:10.713107804Z';
const T2 = '2026-11-22T19:12:10.739831695Z';
const T3 = '2026-11-22T19:12:11.000000001Z';
const silent = winston.createLogger({ silent: true });

type Rec = [string, Buffer];

/** What Docker 20.10 writes for a tty container: "<ts> <message>" back to back, no framing. */
function rawTty(records: Rec[]): Buffer {
  return Buffer.concat(records.flatMap(([ts, msg]) => [Buffer.from(`${ts} `), msg]));
}

/** A line as Docker's copier stores it: 16 KiB pieces sharing one time, the rest with the newline. */
function cutLine(ts: string, line: Buffer): Rec[] {
  const out: Rec[] = [];
  for (let i = 0; i < line.length; i += DOCKER_PARTIAL_BYTES)
    out.push([ts, line.subarray(i, i + DOCKER_PARTIAL_BYTES)]);
  return out;
}

function parseChunked(raw: Buffer, cuts: number[]): Rec[] {
  const got: Rec[] = [];
  const p = new TtyRecordParser((_s, ts, msg) => got.push([ts, Buffer.from(msg)]));
  let at = 0;
  for (const cut of [...cuts, raw.length]) {
    p.push(raw.subarray(at, cut));
    at = cut;
  }
  p.end();
  return got;
}

const show = (recs: Rec[]): Array<[string, string]> => recs.map(([ts, m]) => [ts, m.toString('hex')]);

describe('tty log stream parser', () => {
  const long = Buffer.from('x'.repeat(40_000) + '\r\n');
  // 16384 is not a multiple of 3: the cut falls inside a character
  const euros = Buffer.from('€'.repeat(6000) + '\r\n');
  const exact = Buffer.from('e'.repeat(DOCKER_PARTIAL_BYTES) + '\n');
  const records: Rec[] = [
    [T1, Buffer.from('short line with 2026-11-22T19:12:10.713107804Z inside\r\n')],
    ...cutLine(T1, long),
    ...cutLine(T2, euros),
    ...cutLine(T2, exact),
    [T3, Buffer.from('tail without newline')],
  ];
  const raw = rawTty(records);

  it('takes the real record sizes for granted: pieces of 16384 bytes, newline included in the last', () => {
    expect(cutLine(T1, long).map(([, m]) => m.length)).toEqual([16384, 16384, 7234]);
    expect(cutLine(T2, exact).map(([, m]) => m.toString())).toEqual(['e'.repeat(16384), '\n']);
  });

  it('splits records where Docker ended them, whatever the chunk boundaries', () => {
    const want = show(records);
    expect(show(parseChunked(raw, []))).toEqual(want);
    for (const size of [1, 7, 30, 31, 1000, 16383, 16384, 16385, 16415]) {
      const cuts = Array.from({ length: Math.floor(raw.length / size) }, (_, i) => (i + 1) * size);
      expect(show(parseChunked(raw, cuts))).toEqual(want);
    }
    // every boundary around the record edges
    let edge = 0;
    for (const [ts, m] of records) {
      for (const d of [-1, 0, 1, ts.length, ts.length + 1, ts.length + 2]) {
        const cut = Math.max(0, Math.min(raw.length, edge + d));
        expect(show(parseChunked(raw, [cut]))).toEqual(want);
      }
      edge += ts.length + 1 + m.length;
    }
  });

  it('yields bytes that reassemble the multi-byte line exactly', () => {
    const got = parseChunked(raw, [100, 20_000, 50_000]).filter(([ts]) => ts === T2);
    expect(
      Buffer.concat(got.map(([, m]) => m))
        .subarray(0, euros.length)
        .equals(euros),
    ).toBe(true);
  });
});

// ---- the follower against a fake Docker ----

interface FakeState {
  running: boolean;
}
type LogsReply = (opts: { since?: string }) => Promise<PassThrough>;
type InspectReply = () => Promise<{ State: { Running: boolean } }>;

const connError = (code: string): Error => Object.assign(new Error(`connect ${code} /var/run/docker.sock`), { code });
const httpError = (statusCode: number): Error => Object.assign(new Error(`(HTTP code ${statusCode})`), { statusCode });

function frame(stream: 1 | 2, ts: string, text: string): Buffer {
  const payload = Buffer.from(`${ts} ${text}`);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

/** A logs stream that sends the bytes in small chunks, then ends or breaks as a dying Docker would. */
function streamOf(bytes: Buffer, ending: 'end' | 'break' | 'close'): PassThrough {
  const s = new PassThrough();
  setImmediate(() => {
    for (let i = 0; i < bytes.length; i += 13) s.write(bytes.subarray(i, i + 13));
    setImmediate(() => {
      if (ending === 'end') s.end();
      else if (ending === 'break') s.destroy(connError('ECONNRESET'));
      else s.destroy();
    });
  });
  return s;
}

class FakeDocker {
  readonly logsCalls: Array<{ since?: string; at: number }> = [];
  /** The plain (follow=false) reads made after the container exited, answered with `finalLogs`. */
  readonly plainReads: Array<{ since?: string }> = [];
  finalLogs: Buffer = Buffer.alloc(0);
  inspectCalls = 0;
  unexpected = 0;
  constructor(
    private readonly logsReplies: LogsReply[],
    private readonly inspectReplies: InspectReply[],
    readonly state: FakeState = { running: false },
  ) {}

  /** The shared fake, answering logs and inspect from the scripted replies (errors mapped as the real engine maps them). */
  api(): FakeEngine {
    const engine = new FakeEngine();
    const asEngineError = (err: unknown): never => {
      throw fromDockerError(err);
    };
    engine.containerLogs = async (_id, opts = {}) => {
      this.plainReads.push({ since: opts.since });
      return this.finalLogs;
    };
    engine.followContainerLogs = async (_id, opts = {}) => {
      this.logsCalls.push({ since: opts.since, at: Date.now() });
      const next = this.logsReplies.shift();
      if (!next) {
        this.unexpected += 1;
        throw new Error('unexpected logs call');
      }
      return next(opts).catch(asEngineError);
    };
    engine.inspectContainer = async () => {
      this.inspectCalls += 1;
      const next = this.inspectReplies.shift();
      return inspectInfo(next ? await next().catch(asEngineError) : { State: { Running: this.state.running } });
    };
    return engine;
  }
}

const ID = 'c0ffee'.repeat(10) + 'abcd';
const sinceOf = (ts: string): string => {
  const [sec, frac] = [Math.floor(Date.parse(ts) / 1000), ts.slice(20, 29)];
  return `${sec}.${frac}`;
};

describe('container log follower', () => {
  let dir: string;
  let file: string;
  let m: LogManager | undefined;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-follow-'));
    file = path.join(dir, 'c', '0.log');
  });
  afterEach(async () => {
    m?.closeAll();
    m = undefined;
    jest.useRealTimers();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  const read = (): Promise<string> => fsp.readFile(file, 'utf8');

  it('keeps copying across a Docker outage, resuming mid-line without loss or duplicates', async () => {
    const fake = new FakeDocker(
      [
        // Docker dies after the first piece of a cut line
        async () => streamOf(Buffer.concat([frame(1, T1, 'one\n'), frame(1, T2, 'abc')]), 'break'),
        async () => {
          throw connError('ENOENT'); // socket gone while dockerd restarts
        },
        async () =>
          streamOf(Buffer.concat([frame(1, T2, 'abc'), frame(1, T2, 'def\n'), frame(2, T3, 'three\n')]), 'end'),
      ],
      [
        async () => {
          throw connError('ECONNREFUSED');
        },
      ],
    );
    m = createLogManager(fake.api(), silent, { retryMinMs: 5, retryMaxMs: 20 });
    m.follow(ID, file, false);
    await m.idle(ID);
    expect(await read()).toBe(`${T1} stdout F one\n${T2} stdout P abc\n${T2} stdout F def\n${T3} stderr F three\n`);
    expect(fake.logsCalls.map((c) => c.since)).toEqual([undefined, sinceOf(T2), sinceOf(T2)]);
    expect(fake.unexpected).toBe(0);
  });

  it('resumes from the file after a daemon restart, skipping only the pieces already written', async () => {
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(file, criLines(T1, 'stdout', 'one\n') + criLines(T2, 'stdout', 'abc'));
    const fake = new FakeDocker(
      [async () => streamOf(Buffer.concat([frame(1, T2, 'abc'), frame(1, T2, 'def\n'), frame(1, T3, 'x\n')]), 'end')],
      [],
    );
    m = createLogManager(fake.api(), silent, { retryMinMs: 5 });
    m.follow(ID, file, false);
    await m.idle(ID);
    expect(await read()).toBe(`${T1} stdout F one\n${T2} stdout P abc\n${T2} stdout F def\n${T3} stdout F x\n`);
    expect(fake.logsCalls.map((c) => c.since)).toEqual([sinceOf(T2)]);
  });

  it('reads once more after the exit, so a last record the follow missed is copied once', async () => {
    // the follow ends as the container exits, before Docker flushed the unterminated last line
    const fake = new FakeDocker(
      [async () => streamOf(Buffer.concat([frame(1, T1, 'one\n'), frame(1, T2, 'two\n')]), 'end')],
      [],
    );
    fake.finalLogs = Buffer.concat([frame(1, T2, 'two\n'), frame(1, T3, 'tail')]);
    m = createLogManager(fake.api(), silent);
    m.follow(ID, file, false);
    await m.idle(ID);
    expect(await read()).toBe(`${T1} stdout F one\n${T2} stdout F two\n${T3} stdout P tail\n`);
    expect(fake.plainReads).toEqual([{ since: sinceOf(T2) }]);
  });

  it('writes a record slightly older than the one before it (stdout and stderr race in Docker)', async () => {
    const fake = new FakeDocker(
      [
        async () =>
          streamOf(Buffer.concat([frame(1, T2, 'out\n'), frame(2, T1, 'err\n'), frame(1, T3, 'out2\n')]), 'end'),
      ],
      [],
    );
    m = createLogManager(fake.api(), silent);
    m.follow(ID, file, false);
    await m.idle(ID);
    expect(await read()).toBe(`${T2} stdout F out\n${T1} stderr F err\n${T3} stdout F out2\n`);
  });

  it('copies a tty stream chunked anywhere into P and F entries', async () => {
    const line = Buffer.from('€'.repeat(12_000) + '\r\n'); // 36002 bytes: three pieces
    const raw = rawTty([...cutLine(T1, line), [T2, Buffer.from('tail')]]);
    const fake = new FakeDocker([async () => streamOf(raw, 'end')], []);
    m = createLogManager(fake.api(), silent);
    m.follow(ID, file, true);
    await m.idle(ID);
    const text = await fsp.readFile(file);
    const entries = text.toString('latin1').split('\n').slice(0, -1);
    expect(entries.map((e) => e.split(' ').slice(0, 3).join(' '))).toEqual([
      `${T1} stdout P`,
      `${T1} stdout P`,
      `${T1} stdout F`,
      `${T2} stdout P`,
    ]);
    const content = Buffer.concat(
      entries.map((e) => {
        const body = Buffer.from(e.split(' ').slice(3).join(' '), 'latin1');
        return e.split(' ')[2] === 'F' ? Buffer.concat([body, Buffer.from('\n')]) : body;
      }),
    );
    expect(content.equals(Buffer.concat([line, Buffer.from('tail')]))).toBe(true);
  });

  it('follows again when the container was started again while draining', async () => {
    const fake = new FakeDocker(
      [
        async () => streamOf(frame(1, T1, 'run-1\n'), 'end'),
        async () => streamOf(Buffer.concat([frame(1, T1, 'run-1\n'), frame(1, T2, 'run-2\n')]), 'end'),
      ],
      [async () => ({ State: { Running: true } })],
    );
    m = createLogManager(fake.api(), silent, { retryMinMs: 5 });
    m.follow(ID, file, false);
    await m.idle(ID);
    expect(await read()).toBe(`${T1} stdout F run-1\n${T2} stdout F run-2\n`);
    expect(fake.logsCalls).toHaveLength(2);
  });

  it('gives up once the container is gone (404) or Docker refuses for another reason', async () => {
    const gone = new FakeDocker(
      [async () => streamOf(frame(1, T1, 'a\n'), 'close')],
      [async () => Promise.reject(httpError(404))],
    );
    m = createLogManager(gone.api(), silent, { retryMinMs: 5 });
    m.follow(ID, file, false);
    await m.idle(ID);
    expect(gone.logsCalls).toHaveLength(1);
    expect(gone.inspectCalls).toBe(1);

    const refused = new FakeDocker([async () => Promise.reject(httpError(501))], []);
    const m2 = createLogManager(refused.api(), silent, { retryMinMs: 5 });
    m2.follow(ID, file + '2', false);
    await m2.idle(ID);
    expect(refused.logsCalls).toHaveLength(1);
    expect(refused.unexpected).toBe(0);
  });

  it('stops retrying at once when stopped during a backoff wait', async () => {
    const fake = new FakeDocker([async () => Promise.reject(connError('ECONNREFUSED'))], []);
    m = createLogManager(fake.api(), silent, { retryMinMs: 60_000 });
    m.follow(ID, file, false);
    const done = m.idle(ID);
    while (fake.logsCalls.length === 0) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    m.stop(ID);
    await done; // would take 60 s (and time the test out) if the wait were not interrupted
    expect(fake.logsCalls).toHaveLength(1);
    // a new follow() after stop starts afresh
    m.follow(ID, file, false);
    await m.idle(ID);
    expect(fake.unexpected).toBe(1);
  });

  it('backs off 1 s, doubling, capped at 30 s, while Docker stays unreachable', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const down = async (): Promise<PassThrough> => Promise.reject(connError('ECONNREFUSED'));
    const fake = new FakeDocker(
      [down, down, down, down, down, down, down, down, async () => streamOf(frame(1, T1, 'back\n'), 'end')],
      [],
    );
    m = createLogManager(fake.api(), silent);
    m.follow(ID, file, false);
    await jest.advanceTimersByTimeAsync(200_000);
    const at = fake.logsCalls.map((c) => c.at);
    expect(at.slice(1).map((t, i) => t - at[i])).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
    jest.useRealTimers();
    await m.idle(ID);
    expect(await read()).toBe(`${T1} stdout F back\n`);
  });
});
