import { promises as fsp } from 'fs';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CriLogFile, criEntries, criLines, lastEntries, lastTimestamp } from '../../src/logging/cri-log';
import { FrameParser } from '../../src/docker/demux';
import { splitRecord } from '../../src/logs/docker-frames';

const TS = '2026-11-22T11:10:43.123456789Z';

describe('CRI log format', () => {
  it('marks full and partial lines', () => {
    expect(criLines(TS, 'stdout', 'hello\n')).toBe(`${TS} stdout F hello\n`);
    expect(criLines(TS, 'stderr', 'a\nb\npart')).toBe(`${TS} stderr F a\n${TS} stderr F b\n${TS} stderr P part\n`);
    expect(criLines(TS, 'stdout', '\n')).toBe(`${TS} stdout F \n`);
    expect(criLines(TS, 'stdout', '')).toBe('');
  });

  it('keeps a line longer than 16 KiB intact across partial entries', () => {
    const big = 'x'.repeat(40_000);
    const text = criLines(TS, 'stdout', big.slice(0, 16384)) + criLines(TS, 'stdout', big.slice(16384) + '\n');
    const lines = text.trimEnd().split('\n');
    expect(lines.map((l) => l.split(' ')[2])).toEqual(['P', 'F']);
    expect(lines.map((l) => l.split(' ').slice(3).join(' ')).join('')).toBe(big);
  });

  it('keeps a multi-byte character cut between two partial entries byte-exact', () => {
    const text = Buffer.from('a€b\n'); // € is 3 bytes: cut after its first byte
    const out = Buffer.concat([
      criEntries(TS, 'stdout', text.subarray(0, 2)),
      criEntries(TS, 'stdout', text.subarray(2)),
    ]);
    const prefix = (tag: string): string => `${TS} stdout ${tag} `;
    expect(
      out.equals(
        Buffer.concat([
          Buffer.from(prefix('P')),
          text.subarray(0, 2),
          Buffer.from('\n' + prefix('F')),
          text.subarray(2),
        ]),
      ),
    ).toBe(true);
  });
});

describe('CRI log file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-log-'));
  });
  afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

  it('reopens after a rotation without losing entries', async () => {
    const file = path.join(dir, 'c', '0.log');
    const log = new CriLogFile(file);
    log.write(TS, 'stdout', 'one\n');
    await fsp.rename(file, `${file}.1`);
    log.write(TS, 'stdout', 'two\n'); // still goes to the renamed file, as with any open fd
    log.reopen();
    log.write(TS, 'stdout', 'three\n');
    log.close();
    expect(await fsp.readFile(`${file}.1`, 'utf8')).toBe(`${TS} stdout F one\n${TS} stdout F two\n`);
    expect(await fsp.readFile(file, 'utf8')).toBe(`${TS} stdout F three\n`);
    expect(lastTimestamp(file)).toBe(TS);
    expect(lastTimestamp(path.join(dir, 'missing.log'))).toBeUndefined();
  });

  it('counts the entries sharing the last timestamp, past the first 64 KiB of tail', async () => {
    const file = path.join(dir, 'big.log');
    const later = '2026-11-22T11:10:44.000000001Z';
    const piece = 'y'.repeat(16384);
    // the pieces of one cut line carry the first piece's time
    const text =
      criLines(TS, 'stdout', 'before\n') + Array.from({ length: 6 }, () => criLines(later, 'stdout', piece)).join('');
    await fsp.writeFile(file, text);
    expect(lastEntries(file)).toEqual({ timestamp: later, count: 6 });
    await fsp.writeFile(file, criLines(TS, 'stdout', 'a\nb\n'));
    expect(lastEntries(file)).toEqual({ timestamp: TS, count: 2 });
    await fsp.writeFile(file, '');
    expect(lastEntries(file)).toBeUndefined();
  });
});

describe('docker log stream parsing', () => {
  function frame(stream: number, text: string): Buffer {
    const payload = Buffer.from(text);
    const header = Buffer.alloc(8);
    header[0] = stream;
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  }

  it('reassembles frames split across chunks', () => {
    const got: Array<[string, string]> = [];
    const p = new FrameParser((s, b) => got.push([s, b.toString()]));
    const all = Buffer.concat([frame(1, `${TS} out\n`), frame(2, `${TS} err\n`)]);
    for (let i = 0; i < all.length; i += 5) p.push(all.subarray(i, i + 5));
    expect(got).toEqual([
      ['stdout', `${TS} out\n`],
      ['stderr', `${TS} err\n`],
    ]);
  });

  it('splits the timestamp Docker puts in front of each message, keeping the message as bytes', () => {
    const rec = splitRecord(Buffer.from(`${TS} hello world\n`));
    expect(rec?.timestamp).toBe(TS);
    expect(rec?.message.toString()).toBe('hello world\n');
    expect(splitRecord(Buffer.from('garbage'))).toBeUndefined();
  });
});

describe('CRI log file after close', () => {
  it('never touches its old descriptor again, even when the number now belongs to another file', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-crilog-fd-'));
    const log = new CriLogFile(path.join(dir, 'c', '0.log'));
    log.close();
    // the kernel hands out the lowest free number: the one the log file just gave back
    const other = path.join(dir, 'other');
    const fd = fs.openSync(other, 'w');
    try {
      log.write('2026-01-01T00:00:00.000000000Z', 'stdout', 'late\n');
      log.reopen();
      log.close();
      // still open and ours: a second close would have closed it, a late write would have landed in it
      fs.writeSync(fd, 'mine');
    } finally {
      fs.closeSync(fd);
    }
    expect(await fsp.readFile(other, 'utf8')).toBe('mine');
    expect(await fsp.readFile(path.join(dir, 'c', '0.log'), 'utf8')).toBe('');
    await fsp.rm(dir, { recursive: true });
  });
});
