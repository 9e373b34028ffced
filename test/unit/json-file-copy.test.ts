import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import winston from 'winston';
import { skipUpTo } from '../../src/logs/local-copy';
import { CriLogFile, truncateToMark } from '../../src/logging/cri-log';
import { startJsonFileCopy } from '../../src/logs/json-file-copy';
import { convertJsonLines, criEntriesText, normaliseTime } from '../../src/logs/json-file-records';
import { createLogPositionStore, type LogPositionStore } from '../../src/logs/log-positions';

const silent = winston.createLogger({ silent: true });
const T = '2026-11-23T10:00:00.123456789Z';
const rec = (log: string, stream = 'stdout', time = T): string => JSON.stringify({ log, stream, time }) + '\n';

describe('json-file records -> CRI entries', () => {
  it('pads Go times to nine digits and refuses what is not a time', () => {
    expect(normaliseTime('2026-11-23T10:00:00.1234Z')).toBe('2026-11-23T10:00:00.123400000Z');
    expect(normaliseTime('2026-11-23T10:00:00Z')).toBe('2026-11-23T10:00:00.000000000Z');
    expect(normaliseTime(T)).toBe(T);
    expect(normaliseTime('yesterday')).toBeUndefined();
  });

  it('marks lines F, 16 KiB pieces and an unterminated last line P, per stream', () => {
    const piece = 'y'.repeat(16384);
    const data = Buffer.from(rec('one\n') + rec(piece) + rec('rest\n') + rec('err\n', 'stderr') + rec('tail'));
    const out = convertJsonLines(data);
    expect(out.cri.toString()).toBe(
      `${T} stdout F one\n${T} stdout P ${piece}\n${T} stdout F rest\n${T} stderr F err\n${T} stdout P tail\n`,
    );
    expect(out).toMatchObject({ records: 5, bad: 0, lastTime: T });
  });

  it('keeps multi-byte text (Docker stores it as UTF-8) and splits a record holding several lines', () => {
    expect(convertJsonLines(Buffer.from(rec('€ \u00e9\n'))).cri.toString()).toBe(`${T} stdout F € é\n`);
    expect(criEntriesText(T, 'stdout', 'a\nb\nc')).toBe(`${T} stdout F a\n${T} stdout F b\n${T} stdout P c\n`);
  });

  it("reads escapes, Go's HTML escapes and records with attrs exactly as a JSON parser would", () => {
    const tricky = [
      'quote " and \\ backslash\n',
      'a<b>&c\t\u0001\n',
      '","stream":"stderr","time":"x"}\n',
      'ends in a backslash \\',
      '\\n literal\n',
    ];
    // Go escapes <, > and & as \u003c, \u003e and \u0026
    const goStyle = (log: string, stream = 'stdout'): string =>
      JSON.stringify({ log, stream, time: T })
        .replace(/</g, '\\u003c')
        .replace(/>/g, '\\u003e')
        .replace(/&/g, '\\u0026') + '\n';
    const data = Buffer.from(
      tricky.map((l, i) => goStyle(l, i % 2 ? 'stderr' : 'stdout')).join('') +
        JSON.stringify({ log: 'with attrs\n', stream: 'stdout', attrs: { a: 'b' }, time: T }) +
        '\n',
    );
    const expected =
      tricky.map((l, i) => criEntriesText(T, i % 2 ? 'stderr' : 'stdout', l)).join('') + `${T} stdout F with attrs\n`;
    expect(convertJsonLines(data).cri.toString()).toBe(expected);
  });

  it('counts lines that are not records instead of writing them', () => {
    const out = convertJsonLines(Buffer.from(`not json\n${rec('ok\n')}{"log":1,"time":"x"}\n`));
    expect(out.cri.toString()).toBe(`${T} stdout F ok\n`);
    expect(out.bad).toBe(2);
  });

  it('skips what a CRI file from before positions already holds: earlier times, and as many of the same time', () => {
    const T0 = '2026-11-23T09:59:59.000000000Z';
    const T2 = '2026-11-23T10:00:01.000000000Z';
    const keep = skipUpTo({ timestamp: T, count: 2 });
    const data = Buffer.from(
      rec('old\n', 'stdout', T0) +
        rec('p1', 'stdout', T) +
        rec('p2\n', 'stdout', T) +
        rec('p3\n', 'stdout', T) +
        rec('new\n', 'stdout', T2),
    );
    expect(convertJsonLines(data, keep).cri.toString()).toBe(`${T} stdout F p3\n${T2} stdout F new\n`);
  });
});

describe('saved positions and the CRI file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-logpos-'));
  });
  afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

  it('saves atomically, the newest save winning, and forgets on remove', async () => {
    const store = createLogPositionStore(path.join(dir, 'pos'));
    const pos = (offset: number) => ({
      version: 1 as const,
      source: { ino: 1, offset, head: 'h', size: offset },
      cri: { ino: 2, size: offset },
    });
    await Promise.all([store.save('c1', pos(1)), store.save('c1', pos(2)), store.save('c1', pos(3))]);
    expect(store.load('c1')?.source.offset).toBe(3);
    expect(await fsp.readdir(path.join(dir, 'pos'))).toEqual(['c1.json']);
    await fsp.writeFile(path.join(dir, 'pos', 'c2.json'), '{"version":1,"source":{}}');
    expect(store.load('c2')).toBeUndefined();
    expect((await store.list()).sort()).toEqual(['c1', 'c2']);
    await store.remove('c1');
    expect(store.load('c1')).toBeUndefined();
  });

  it('cuts the CRI file back to the saved size, also after the kubelet renamed it', async () => {
    const file = path.join(dir, '0.log');
    await fsp.writeFile(file, 'kept\nextra\n');
    const ino = (await fsp.stat(file)).ino;
    expect(truncateToMark(file, { ino, size: 5 })).toEqual({ path: file, dropped: 6 });
    expect(await fsp.readFile(file, 'utf8')).toBe('kept\n');
    await fsp.appendFile(file, 'more\n');
    await fsp.rename(file, `${file}.20261123`);
    await fsp.writeFile(file, 'new file\n');
    expect(truncateToMark(file, { ino, size: 5 })).toEqual({ path: `${file}.20261123`, dropped: 5 });
    expect(await fsp.readFile(file, 'utf8')).toBe('new file\n');
  });

  it('counts appends against the file they went to, across a reopen', async () => {
    const file = path.join(dir, 'c', '0.log');
    const log = new CriLogFile(file);
    const a = log.append(Buffer.from('one\n'));
    await fsp.rename(file, `${file}.1`);
    log.reopen(); // the append in flight finishes in the old file
    await a;
    expect(log.mark()).toEqual({ ino: (await fsp.stat(file)).ino, size: 0 });
    await log.append(Buffer.from('two\n'));
    expect(log.mark().size).toBe(4);
    log.close();
    expect(await fsp.readFile(`${file}.1`, 'utf8')).toBe('one\n');
    expect(await fsp.readFile(file, 'utf8')).toBe('two\n');
  });
});

describe('json-file copy loop', () => {
  let dir: string;
  let json: string;
  let cri: string;
  let store: LogPositionStore;
  let running: boolean;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-jsoncopy-'));
    json = path.join(dir, 'docker', 'c-json.log');
    cri = path.join(dir, 'pod', '0.log');
    await fsp.mkdir(path.dirname(json), { recursive: true });
    store = createLogPositionStore(path.join(dir, 'positions'));
    running = true;
  });
  afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

  const lines = (from: number, to: number): string =>
    Array.from({ length: to - from + 1 }, (_, i) => rec(`n=${from + i}\n`)).join('');
  const criLines = async (): Promise<string[]> =>
    (await fsp.readFile(cri, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ').slice(3).join(' '));
  const range = (from: number, to: number): string[] =>
    Array.from({ length: to - from + 1 }, (_, i) => `n=${from + i}`);

  const copy = (file: CriLogFile) =>
    startJsonFileCopy({
      containerId: 'c',
      jsonPath: json,
      file,
      positions: store,
      saved: store.load('c'),
      isRunning: async () => running,
      log: silent,
      idleMinMs: 1,
      idleMaxMs: 5,
      exitCheckMs: 5,
      chunkBytes: 1024,
    });

  it('copies until the container exited and its last records are in, then saves where it stopped', async () => {
    await fsp.writeFile(json, lines(1, 100));
    const file = new CriLogFile(cri);
    const c = copy(file);
    await fsp.appendFile(json, lines(101, 150));
    running = false;
    await c.done;
    file.close();
    expect(await criLines()).toEqual(range(1, 150));
    const saved = store.load('c');
    expect(saved?.source.offset).toBe((await fsp.stat(json)).size);
    expect(saved?.cri.size).toBe((await fsp.stat(cri)).size);
  });

  /** A copy whose timers all wait a minute: within a test only the directory watch wakes it. */
  const sleepyCopy = (file: CriLogFile) => {
    const minute = 60_000;
    return startJsonFileCopy({
      ...{ containerId: 'c', jsonPath: json, file, positions: store, isRunning: async () => running, log: silent },
      ...{ idleMinMs: minute, pauseMaxMs: minute, idleMaxMs: minute, watchedIdleMs: minute, exitCheckMs: minute },
    });
  };

  it('is woken by a write to the log directory instead of waiting for its next poll', async () => {
    await fsp.writeFile(json, lines(1, 10));
    const file = new CriLogFile(cri);
    const c = sleepyCopy(file);
    try {
      const until = async (n: number): Promise<void> => {
        const deadline = Date.now() + 3000;
        while ((await fsp.readFile(cri, 'utf8').catch(() => '')).split('\n').length <= n) {
          if (Date.now() > deadline) throw new Error(`line ${n} not copied within 3 s`);
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await until(10);
      // the loop is asleep for a minute now: only the directory watch can bring these lines in time
      await new Promise((r) => setTimeout(r, 100));
      await fsp.appendFile(json, lines(11, 12));
      await until(12);
      expect(await criLines()).toEqual(range(1, 12));
    } finally {
      c.stop();
      await c.done;
      file.close();
    }
  });

  it('ends soon after the container stopped: Docker writing its state in the directory wakes the check', async () => {
    await fsp.writeFile(json, lines(1, 5));
    const file = new CriLogFile(cri);
    const c = sleepyCopy(file);
    try {
      await new Promise((r) => setTimeout(r, 200));
      running = false;
      // what dockerd does when a container stops: its config.v2.json is rewritten beside the log
      await fsp.writeFile(path.join(path.dirname(json), 'config.v2.json'), '{}');
      const ended = await Promise.race([c.done.then(() => true), new Promise((r) => setTimeout(() => r(false), 3000))]);
      expect(ended).toBe(true);
      expect(await criLines()).toEqual(range(1, 5));
    } finally {
      c.stop();
      await c.done;
      file.close();
    }
  });

  /** A copy whose "still running?" waits until the test answers it, as Docker does on a loaded host. */
  const slowCheckCopy = (file: CriLogFile) => {
    const answers: Array<(running: boolean) => void> = [];
    const c = startJsonFileCopy({
      ...{ containerId: 'c', jsonPath: json, file, positions: store, log: silent },
      ...{ idleMinMs: 1, idleMaxMs: 5, watchedIdleMs: 5, exitCheckMs: 5 },
      isRunning: () => new Promise<boolean>((resolve) => answers.push(resolve)),
    });
    const asked = async (): Promise<(running: boolean) => void> => {
      for (let i = 0; i < 300 && answers.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const answer = answers.shift();
      if (!answer) throw new Error('the copy never asked whether the container runs');
      return answer;
    };
    return { c, asked };
  };
  const copiedUpTo = async (n: number): Promise<void> => {
    for (let i = 0; i < 300; i++) {
      if ((await fsp.readFile(cri, 'utf8').catch(() => '')).includes(`n=${n}\n`)) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`n=${n} not copied within 3 s`);
  };

  it('goes on copying while Docker takes its time to say whether the container runs', async () => {
    await fsp.writeFile(json, lines(1, 10));
    const file = new CriLogFile(cri);
    const { c, asked } = slowCheckCopy(file);
    const answer = await asked();
    // the writer goes on (and Docker rotates) while the answer is pending
    await fsp.appendFile(json, lines(11, 40));
    await copiedUpTo(40);
    answer(false);
    await c.done;
    file.close();
    expect(await criLines()).toEqual(range(1, 40));
  });

  it('is not ended by a "not running" asked before the container was started again', async () => {
    await fsp.writeFile(json, lines(1, 10));
    const file = new CriLogFile(cri);
    const { c, asked } = slowCheckCopy(file);
    const stale = await asked();
    expect(c.kick()).toBe(true);
    stale(false);
    await fsp.appendFile(json, lines(11, 20));
    await copiedUpTo(20);
    // the check after the start is the one that counts
    (await asked())(false);
    await c.done;
    file.close();
    expect(await criLines()).toEqual(range(1, 20));
  });

  it('after a kill between an append and its save, cuts the CRI file back and copies the rest once', async () => {
    await fsp.writeFile(json, lines(1, 100));
    const first = new CriLogFile(cri);
    const c1 = copy(first);
    running = false;
    await c1.done;
    first.close();
    const saved = store.load('c');
    expect(saved).toBeDefined();
    // what a kill -9 leaves: entries appended after the saved position, position not updated
    await fsp.appendFile(json, lines(101, 120));
    await fsp.appendFile(cri, `${T} stdout F n=101\n${T} stdout F n=102\n`);
    expect(truncateToMark(cri, saved?.cri ?? { ino: 0, size: 0 })?.dropped).toBeGreaterThan(0);
    const second = new CriLogFile(cri);
    await copy(second).done;
    second.close();
    expect(await criLines()).toEqual(range(1, 120));
  });

  it('keeps copying into the new file after a kubelet rotation, and saves the new file at its start first', async () => {
    await fsp.writeFile(json, lines(1, 50));
    const file = new CriLogFile(cri);
    const c = copy(file);
    for (let i = 0; i < 100 && (await fsp.readFile(cri, 'utf8').catch(() => '')).split('\n').length < 51; i++)
      await new Promise((r) => setTimeout(r, 5));
    await fsp.rename(cri, `${cri}.1`);
    file.reopen();
    await fsp.appendFile(json, lines(51, 80));
    running = false;
    await c.done;
    file.close();
    const all = (await fsp.readFile(`${cri}.1`, 'utf8')) + (await fsp.readFile(cri, 'utf8'));
    expect(
      all
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ').slice(3).join(' ')),
    ).toEqual(range(1, 80));
    expect(store.load('c')?.cri.ino).toBe((await fsp.stat(cri)).ino);
  });
});
