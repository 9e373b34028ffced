import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { createFileMemo } from '../../src/checkpoint/file-memo';

describe('file memo', () => {
  let dir: string;
  let file: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-memo-'));
    file = path.join(dir, 'f.json');
    await fsp.writeFile(file, '{"n":1}');
  });
  afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

  const loader = () => {
    let loads = 0;
    const load = async (): Promise<{ n: number }> => {
      loads++;
      return JSON.parse(await fsp.readFile(file, 'utf8')) as { n: number };
    };
    return { load, loads: () => loads };
  };

  it('loads a settled, unchanged file once and hands out a frozen value', async () => {
    const memo = createFileMemo<{ n: number }>({ racyMs: 0 });
    const l = loader();
    const a = await memo.through(file, l.load);
    const b = await memo.through(file, l.load);
    expect(b).toEqual({ n: 1 });
    expect(b).toBe(a);
    expect(l.loads()).toBe(1);
    expect(() => {
      (b as { n: number }).n = 2;
    }).toThrow(TypeError);
  });

  it('loads again after the file is edited in place, replaced or removed', async () => {
    const memo = createFileMemo<{ n: number } | undefined>({ racyMs: 0 });
    const l = loader();
    await memo.through(file, l.load);
    // same inode, same size: only the times tell
    await new Promise((r) => setTimeout(r, 5));
    await fsp.writeFile(file, '{"n":2}');
    expect(await memo.through(file, l.load)).toEqual({ n: 2 });
    await fsp.writeFile(`${file}.new`, '{"n":33}');
    await fsp.rename(`${file}.new`, file);
    expect(await memo.through(file, l.load)).toEqual({ n: 33 });
    await fsp.rm(file);
    expect(await memo.through(file, async () => undefined)).toBeUndefined();
    expect(l.loads()).toBe(3);
  });

  it('does not keep what it made from a file changed within the racy window', async () => {
    const memo = createFileMemo<{ n: number }>({ racyMs: 60_000 });
    const l = loader();
    await memo.through(file, l.load);
    await memo.through(file, l.load);
    expect(l.loads()).toBe(2);
  });

  it('forgets an entry on delete and passes a failed load through without keeping it', async () => {
    const memo = createFileMemo<{ n: number }>({ racyMs: 0 });
    const l = loader();
    await memo.through(file, l.load);
    memo.delete(file);
    await memo.through(file, l.load);
    expect(l.loads()).toBe(2);
    const boom = createFileMemo<{ n: number }>({ racyMs: 0 });
    await expect(boom.through(file, () => Promise.reject(new Error('bad')))).rejects.toThrow('bad');
    expect(await boom.through(file, l.load)).toEqual({ n: 1 });
  });

  it('keeps at most maxEntries files', async () => {
    const memo = createFileMemo<{ n: number }>({ racyMs: 0, maxEntries: 1 });
    const other = path.join(dir, 'g.json');
    await fsp.writeFile(other, '{"n":5}');
    const l = loader();
    await memo.through(file, l.load);
    await memo.through(other, async () => ({ n: 5 }));
    await memo.through(file, l.load);
    expect(l.loads()).toBe(2);
  });
});
