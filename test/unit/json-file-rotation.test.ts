/** Listing a json-file log's rotation set and finding a saved position's file in it. */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { findSaved, headOf, listRotated } from '../../src/logs/json-file-rotation';

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
  const listed = await listRotated(dir, BASE);
  expect(listed.map((l) => [l.name, l.index, l.size])).toEqual([
    [`${BASE}.2`, 2, 4],
    [`${BASE}.1`, 1, 4],
    [BASE, 0, 5],
  ]);
  expect(await listRotated(path.join(dir, 'gone'), BASE)).toEqual([]);
});

it('finds the saved file by inode and first line, not by a newer file on the same inode', async () => {
  await write(`${BASE}.1`, '{"log":"a"}\n{"log":"b"}\n');
  await write(BASE, '{"log":"c"}\n');
  const listed = await listRotated(dir, BASE);
  const fh = await fsp.open(path.join(dir, `${BASE}.1`), 'r');
  const head = await headOf(fh);
  await fh.close();
  expect(head).toMatch(/^[0-9a-f]{40}$/);
  const saved = { ino: listed[0].ino, offset: 12, head: head ?? '', size: 24 };
  expect(await findSaved(dir, listed, saved)).toBe(0);
  expect(await findSaved(dir, listed, { ...saved, head: 'f'.repeat(40) })).toBe(-1);
  // a saved offset past the file's size cannot be that file
  expect(await findSaved(dir, listed, { ...saved, offset: 1000 })).toBe(-1);
});

it('has no head until the first line is complete', async () => {
  await write(BASE, '{"log":"partial');
  const fh = await fsp.open(path.join(dir, BASE), 'r');
  expect(await headOf(fh)).toBeUndefined();
  await fh.close();
});
