import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  closeCgroupFiles,
  closeHeldIn,
  forgetKept,
  KEPT_MS,
  keyedValue as keyedIn,
  readBigInt,
  readKept,
  readKeyed,
  readNumber,
  statKey,
} from '../../src/stats/files';
import { fdsOn } from '../support/fds';

/** keyedValue over text, as the tests write it. */
const keyedValue = (text: string | undefined, key: string): number | undefined =>
  text === undefined ? undefined : keyedIn(Buffer.from(text), statKey(key));

describe('keyedValue', () => {
  const stat = 'cache 100\nrss 999\nrss_huge 7\ninactive_file 5\ntotal_rss 4096\ntotal_inactive_file 2048\n';
  it('finds a key at the start and inside the text, never a longer key or a suffix', () => {
    expect(keyedValue(stat, 'cache ')).toBe(100);
    expect(keyedValue(stat, 'rss ')).toBe(999);
    expect(keyedValue(stat, 'rss_huge ')).toBe(7);
    expect(keyedValue(stat, 'total_rss ')).toBe(4096);
    expect(keyedValue(stat, 'inactive_file ')).toBe(5);
    expect(keyedValue(stat, 'total_inactive_file ')).toBe(2048);
  });
  it('a missing key, an empty text and a non-numeric value read as undefined', () => {
    expect(keyedValue(stat, 'pgfault ')).toBeUndefined();
    expect(keyedValue(undefined, 'rss ')).toBeUndefined();
    expect(keyedValue('', 'rss ')).toBeUndefined();
    expect(keyedValue('rss -1\n', 'rss ')).toBeUndefined();
    expect(keyedValue('rss 12x\n', 'rss ')).toBeUndefined();
  });
  it('the last line needs no newline; trailing blanks are allowed', () => {
    expect(keyedValue('a 1\nusage_usec 2500', 'usage_usec ')).toBe(2500);
    expect(keyedValue('usage_usec 2500 \r\n', 'usage_usec ')).toBe(2500);
  });
});

describe('single-value cgroup files', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-stats-files-'));
  });
  afterEach(async () => {
    closeCgroupFiles();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('closes the kept-open files of the directories it is given, and only those', async () => {
    const a = path.join(dir, 'a');
    const b = path.join(dir, 'b');
    await Promise.all([fsp.mkdir(a), fsp.mkdir(b)]);
    await Promise.all([fsp.writeFile(path.join(a, 'n'), '1\n'), fsp.writeFile(path.join(b, 'n'), '2\n')]);
    expect([readNumber(path.join(a, 'n')), readNumber(path.join(b, 'n'))]).toEqual([1, 2]);
    expect([await fdsOn(path.join(a, 'n')), await fdsOn(path.join(b, 'n'))]).toEqual([1, 1]);
    closeHeldIn(new Set([a]));
    expect([await fdsOn(path.join(a, 'n')), await fdsOn(path.join(b, 'n'))]).toEqual([0, 1]);
    expect(readNumber(path.join(a, 'n'))).toBe(1);
    expect(await fdsOn(path.join(a, 'n'))).toBe(1);
    // opened again, it is found again: the directory index follows every open and close
    closeHeldIn(new Set([a, path.join(dir, 'none')]));
    expect([await fdsOn(path.join(a, 'n')), await fdsOn(path.join(b, 'n'))]).toEqual([0, 1]);
  });

  it('numbers, `max`, garbage and missing files', async () => {
    const f = (name: string, text: string): Promise<void> => fsp.writeFile(path.join(dir, name), text);
    await Promise.all([f('n', '4096\n'), f('max', 'max\n'), f('junk', '12 34\n'), f('big', '18446744073709551615\n')]);
    expect(readNumber(path.join(dir, 'n'))).toBe(4096);
    expect(readNumber(path.join(dir, 'max'))).toBeUndefined();
    expect(readNumber(path.join(dir, 'junk'))).toBeUndefined();
    expect(readNumber(path.join(dir, 'none'))).toBeUndefined();
    expect(readBigInt(path.join(dir, 'big'))).toBe(18446744073709551615n);
  });

  it('an open file is read again from its start, so a rewritten value is seen', async () => {
    const file = path.join(dir, 'usage');
    await fsp.writeFile(file, '1\n');
    expect(readNumber(file)).toBe(1);
    await fsp.writeFile(file, '22\n');
    expect(readNumber(file)).toBe(22);
  });

  it("a short file read after a longer one sees none of the longer file's bytes", async () => {
    const long = path.join(dir, 'long');
    const short = path.join(dir, 'short');
    await fsp.writeFile(long, 'cache 1\nrss 2\ntotal_rss 3\npgfault 123456789\n');
    await fsp.writeFile(short, 'cache 9\n');
    const keys = ['cache ', 'total_rss ', 'pgfault '].map(statKey);
    const out: Array<number | undefined> = [];
    readKeyed(long, keys, out);
    expect(out).toEqual([1, 3, 123456789]);
    readKeyed(short, keys, out);
    expect(out).toEqual([9, undefined, undefined]);
    await fsp.writeFile(short, '7\n');
    await fsp.writeFile(long, '123456789\n');
    expect(readNumber(long)).toBe(123456789);
    expect(readNumber(short)).toBe(7);
  });

  describe('a kept value (a memory limit)', () => {
    let file: string;
    let now: number;
    beforeEach(async () => {
      file = path.join(dir, 'memory.limit_in_bytes');
      await fsp.writeFile(file, '1000\n');
      now = Date.now();
      jest.spyOn(Date, 'now').mockImplementation(() => now);
      expect(readKept(file)).toBe(1000);
      await fsp.writeFile(file, '2000\n');
    });
    afterEach(() => jest.restoreAllMocks());

    it('stands for KEPT_MS, then the file is read again', () => {
      now += KEPT_MS - 1;
      expect(readKept(file)).toBe(1000);
      now += 1;
      expect(readKept(file)).toBe(2000);
    });
    it('is read again at once after forgetKept (crishim changed limits)', () => {
      forgetKept();
      expect(readKept(file)).toBe(2000);
    });
    it('goes with its file: a cgroup closed as stopped or gone is read again', () => {
      closeHeldIn(new Set([dir]));
      expect(readKept(file)).toBe(2000);
    });
    it('keeps "none" too, and a file that cannot be read is asked again', async () => {
      await fsp.writeFile(file, 'max\n');
      forgetKept();
      expect(readKept(file)).toBeUndefined();
      await fsp.writeFile(file, '3000\n');
      expect(readKept(file)).toBeUndefined();
      const gone = path.join(dir, 'gone');
      expect(readKept(gone)).toBeUndefined();
      await fsp.writeFile(gone, '5\n');
      expect(readKept(gone)).toBe(5);
    });
  });

  it('a missing keyed file leaves every value undefined', () => {
    const out: Array<number | undefined> = [1, 2];
    readKeyed(path.join(dir, 'none'), [statKey('a '), statKey('b ')], out);
    expect(out).toEqual([undefined, undefined]);
  });

  it('a keyed file longer than the shared buffer is read whole', async () => {
    const file = path.join(dir, 'huge');
    await fsp.writeFile(file, `${'pad 1\n'.repeat(20_000)}wanted 42\n`);
    const out: Array<number | undefined> = [];
    readKeyed(file, [statKey('wanted ')], out);
    expect(out).toEqual([42]);
  });
});
