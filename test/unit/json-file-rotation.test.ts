/** Listing a json-file log's rotation set and finding a saved position's file in it. */
import { closeSync, openSync, promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { findSaved, headOf, listRotated, type ListingFs } from '../../src/logs/json-file-rotation';

let dir: string;
beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-rot-'));
});
afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

const BASE = 'abc-json.log';
const write = (name: string, text: string): Promise<void> => fsp.writeFile(path.join(dir, name), text);

it('lists the live file and its .n siblings oldest first, skipping compressed and foreign names', async () => {
  await write(BASE, 'live\n');
  await write(`${BASE}.1`, 'one\n');
  await write(`${BASE}.2`, 'two\n');
  await write(`${BASE}.3.gz`, 'gz');
  await write(`${BASE}.x`, 'x');
  await write('other-json.log', 'o');
  const listed = listRotated(dir, BASE) ?? [];
  expect(listed.map((l) => [l.name, l.index, l.size])).toEqual([
    [`${BASE}.2`, 2, 4],
    [`${BASE}.1`, 1, 4],
    [BASE, 0, 5],
  ]);
  expect(listRotated(path.join(dir, 'gone'), BASE)).toEqual([]);
});

it('finds the saved file by inode and first line, not by a newer file on the same inode', async () => {
  await write(`${BASE}.1`, '{"log":"a"}\n{"log":"b"}\n');
  await write(BASE, '{"log":"c"}\n');
  const listed = listRotated(dir, BASE) ?? [];
  const fd = openSync(path.join(dir, `${BASE}.1`), 'r');
  const head = await headOf(fd);
  closeSync(fd);
  expect(head).toMatch(/^[0-9a-f]{40}$/);
  const saved = { ino: listed[0].ino, offset: 12, head: head ?? '', size: 24 };
  expect(await findSaved(dir, listed, saved)).toBe(0);
  expect(await findSaved(dir, listed, { ...saved, head: 'f'.repeat(40) })).toBe(-1);
  // a saved offset past the file's size cannot be that file
  expect(await findSaved(dir, listed, { ...saved, offset: 1000 })).toBe(-1);
});

it('has no head until the first line is complete', async () => {
  await write(BASE, '{"log":"partial');
  const fd = openSync(path.join(dir, BASE), 'r');
  expect(await headOf(fd)).toBeUndefined();
  closeSync(fd);
});

/** Docker's rotation set in memory (inode per index, live first), rotating on cue in the middle of a listing. */
class RotatingSet implements ListingFs {
  /** Inodes by index: [live, .1, .2, ...]. */
  inodes = [14, 13, 12, 11];
  private nextIno = 15;
  private stats = 0;
  /** Stat calls (1-based) just before which a rotation runs. */
  rotateBeforeStat = new Set<number>();
  /** Names readdir leaves out, once each (a readdir racing renames) or for good. */
  missOnce = new Set<string>();
  missAlways = new Set<string>();

  private name = (i: number): string => (i === 0 ? BASE : `${BASE}.${i}`);

  /** Oldest first, as listRotated orders them. */
  snapshot(): number[] {
    return [...this.inodes].reverse();
  }
  readdir(): string[] {
    // oldest first: readdir's order is the directory's, and this one hides a skipped file from a single pass
    const names = this.inodes
      .map((_, i) => this.name(i))
      .reverse()
      .filter((n) => !this.missAlways.has(n));
    const seen = names.filter((n) => !this.missOnce.has(n));
    this.missOnce.clear();
    return seen;
  }
  stat(file: string): { ino: number; size: number } | undefined {
    this.stats += 1;
    // Docker's rotation with max-file 4: the oldest is deleted, every file moves up, a new live file
    if (this.rotateBeforeStat.has(this.stats)) this.inodes = [this.nextIno++, ...this.inodes.slice(0, 3)];
    const i = this.inodes.findIndex((_, k) => path.join('/d', this.name(k)) === file);
    return i < 0 ? undefined : { ino: this.inodes[i], size: 1 };
  }
}

describe('listing while Docker rotates', () => {
  it('gives one consistent snapshot when a rotation runs in the middle of the listing', async () => {
    const fs = new RotatingSet();
    // first pass half done: a single pass would see .3 and .2 before it and .1 and live after,
    // four distinct files with the one that moved from .1 to .2 missing
    fs.rotateBeforeStat.add(3);
    const listed = listRotated('/d', BASE, fs);
    expect(listed?.map((l) => l.ino)).toEqual(fs.snapshot());
    expect(listed?.map((l) => l.index)).toEqual([3, 2, 1, 0]);
  });

  it('gives a consistent snapshot when the rotation falls between the two passes', async () => {
    const fs = new RotatingSet();
    fs.rotateBeforeStat.add(5);
    expect(listRotated('/d', BASE, fs)?.map((l) => l.ino)).toEqual(fs.snapshot());
  });

  it('lists again when readdir missed a name, rather than skip the file behind it', async () => {
    const fs = new RotatingSet();
    fs.missOnce.add(`${BASE}.2`);
    expect(listRotated('/d', BASE, fs)?.map((l) => l.ino)).toEqual(fs.snapshot());
  });

  it('still lists a set with a gap that stays (a file removed by hand)', async () => {
    const fs = new RotatingSet();
    fs.missAlways.add(`${BASE}.2`);
    expect(listRotated('/d', BASE, fs)?.map((l) => l.index)).toEqual([3, 1, 0]);
  });

  it('gives up for now when every attempt is cut by a rotation', async () => {
    const fs = new RotatingSet();
    for (let k = 1; k <= 200; k += 3) fs.rotateBeforeStat.add(k + 1);
    expect(listRotated('/d', BASE, fs)).toBeUndefined();
  });
});
