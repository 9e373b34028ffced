import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import winston from 'winston';
import { createCheckpointStore, type CheckpointBody } from '../../src/checkpoint/store';
import { recordingLogger } from '../support/recording-logger';

const quiet = winston.createLogger({ silent: true });

const errnoError = (code: string): NodeJS.ErrnoException => Object.assign(new Error(`${code}: simulated`), { code });
const ID = 'a'.repeat(64);
const body: CheckpointBody = {
  name: 'web',
  namespace: 'default',
  data: { port_mappings: [{ protocol: 'tcp', container_port: 80, host_port: 8080 }], host_network: false },
  crishim: { sandbox_id: ID, uid: 'u1', attempt: 0, created_at: '1700000000000000000' },
};

describe('checkpoint store', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cp-'));
  });
  afterEach(() => fsp.rm(dir, { recursive: true, force: true }));

  it('writes, reads back, lists and removes (idempotently)', async () => {
    const store = await createCheckpointStore(dir, quiet);
    await store.write(ID, body);
    const cp = await store.read(ID);
    expect(cp).toMatchObject({ version: 'v1', ...body });
    expect(typeof cp?.checksum).toBe('string');
    expect(await store.list()).toEqual([ID]);
    const mode = (await fsp.stat(path.join(dir, `${ID}.json`))).mode & 0o777;
    expect(mode & 0o077).toBe(0);
    await store.remove(ID);
    await store.remove(ID);
    expect(await store.read(ID)).toBeUndefined();
    expect(await store.list()).toEqual([]);
  });

  it('answers a repeated read of an unchanged checkpoint from memory and sees an in-place edit', async () => {
    const { logger, records } = recordingLogger();
    const store = await createCheckpointStore(dir, logger, { racyMs: 0 });
    await store.write(ID, body);
    // settled means changed before Date.now(), whole milliseconds: a read in the write's own
    // millisecond is not kept, even with racyMs 0
    await new Promise((r) => setTimeout(r, 5));
    const readFile = jest.spyOn(fsp, 'readFile');
    try {
      const first = await store.read(ID);
      const second = await store.read(ID);
      expect(second).toEqual(first);
      expect(readFile).toHaveBeenCalledTimes(1);
      // a hand edit keeps the inode: the new times must send the next read to the file
      await new Promise((r) => setTimeout(r, 5));
      const file = path.join(dir, `${ID}.json`);
      await fsp.writeFile(file, (await fsp.readFile(file, 'utf8')).replace('"web"', '"WEB"'));
      expect(await store.read(ID)).toBeUndefined();
      expect(records.some((r) => r.message === 'checkpoint is unreadable; moved aside')).toBe(true);
    } finally {
      readFile.mockRestore();
    }
  });

  it('sees a checkpoint written behind its back after answering a list from memory', async () => {
    const store = await createCheckpointStore(dir, quiet);
    await store.write(ID, body);
    // a directory unchanged for a while: its listing may be kept
    const past = new Date(Date.now() - 10_000);
    await fsp.utimes(dir, past, past);
    expect(await store.list()).toEqual([ID]);
    expect(await store.list()).toEqual([ID]);
    const other = 'b'.repeat(64);
    await fsp.writeFile(
      path.join(dir, other),
      JSON.stringify({
        version: 'v1',
        name: 'x',
        namespace: 'y',
        data: { port_mappings: null, host_network: false },
        checksum: 1,
      }),
    );
    expect([...(await store.list())].sort()).toEqual([ID, other]);
    await fsp.rm(path.join(dir, `${ID}.json`));
    expect(await store.list()).toEqual([other]);
  });

  it('leaves no temp files behind', async () => {
    const store = await createCheckpointStore(dir, quiet);
    await store.write(ID, body);
    await store.write(ID, { ...body, name: 'web2' });
    expect(await fsp.readdir(dir)).toEqual([`${ID}.json`]);
    expect((await store.read(ID))?.name).toBe('web2');
  });

  it.each([
    ['garbage', 'not json{'],
    ['schema violation', JSON.stringify({ version: 'v9', name: 'x' })],
    ['tampered', null],
  ])('moves a corrupt file aside (%s) and reads it as absent', async (_why, content) => {
    const store = await createCheckpointStore(dir, quiet);
    const file = path.join(dir, `${ID}.json`);
    if (content === null) {
      await store.write(ID, body);
      const cp = JSON.parse(await fsp.readFile(file, 'utf8'));
      cp.name = 'other';
      await fsp.writeFile(file, JSON.stringify(cp));
    } else {
      await fsp.writeFile(file, content);
    }
    expect(await store.read(ID)).toBeUndefined();
    expect(await fsp.readdir(path.join(dir, 'corrupt'))).toHaveLength(1);
    expect(await store.list()).toEqual([]);
  });

  it('reads a cri-dockerd checkpoint (integer checksum, no crishim fields)', async () => {
    const store = await createCheckpointStore(dir, quiet);
    const foreign = {
      version: 'v1',
      name: 'old',
      namespace: 'kube-system',
      data: { port_mappings: null, host_network: true },
      checksum: 123456,
    };
    await fsp.writeFile(path.join(dir, `${ID}.json`), JSON.stringify(foreign));
    expect(await store.read(ID)).toMatchObject({ name: 'old', data: { host_network: true } });
  });

  it('refuses ids that could escape the directory', async () => {
    const store = await createCheckpointStore(dir, quiet);
    await expect(store.read('../../etc/passwd')).rejects.toThrow(/invalid sandbox id/);
  });

  it('sets aside a directory named like a checkpoint instead of throwing', async () => {
    const { logger, records } = recordingLogger();
    const store = await createCheckpointStore(dir, logger);
    await fsp.mkdir(path.join(dir, `${ID}.json`));
    await fsp.writeFile(path.join(dir, `${ID}.json`, 'inside'), 'x');
    expect(await store.list()).toEqual([ID]);
    await expect(store.read(ID)).resolves.toBeUndefined();
    const aside = await fsp.readdir(path.join(dir, 'corrupt'));
    expect(aside).toHaveLength(1);
    expect(aside[0]).toMatch(new RegExp(`^${ID}\\.json\\.\\d+$`));
    expect(await store.list()).toEqual([]);
    expect(records.find((r) => r.level === 'error' && r.file === path.join(dir, `${ID}.json`))?.reason).toMatch(
      /EISDIR/,
    );
  });

  it('sets aside a checkpoint it may not read (EACCES) and falls back to the bare-id file', async () => {
    const { logger, records } = recordingLogger();
    const store = await createCheckpointStore(dir, logger);
    await store.write(ID, body);
    const foreign = {
      version: 'v1',
      name: 'legacy',
      namespace: 'ns',
      data: { port_mappings: null, host_network: false },
      checksum: 1,
    };
    await fsp.writeFile(path.join(dir, ID), JSON.stringify(foreign));
    // root reads any file whatever its mode, so the refusal is simulated
    const realRead = fsp.readFile;
    const spy = jest
      .spyOn(fsp, 'readFile')
      .mockImplementation(((file: Parameters<typeof fsp.readFile>[0], ...rest: unknown[]) =>
        String(file).endsWith('.json')
          ? Promise.reject(errnoError('EACCES'))
          : (realRead as (...a: unknown[]) => Promise<string>)(file, ...rest)) as typeof fsp.readFile);
    try {
      await expect(store.read(ID)).resolves.toMatchObject({ name: 'legacy' });
    } finally {
      spy.mockRestore();
    }
    expect(await fsp.readdir(path.join(dir, 'corrupt'))).toHaveLength(1);
    expect(records.some((r) => r.level === 'error' && /EACCES/.test(String(r.reason)))).toBe(true);
  });

  it('keeps a checkpoint in place when the read fails for a passing reason (EMFILE)', async () => {
    const store = await createCheckpointStore(dir, quiet);
    await store.write(ID, body);
    const spy = jest.spyOn(fsp, 'readFile').mockRejectedValue(errnoError('EMFILE'));
    try {
      await expect(store.read(ID)).resolves.toBeUndefined();
    } finally {
      spy.mockRestore();
    }
    expect(await store.read(ID)).toMatchObject({ name: 'web' });
  });

  it('never throws when the bad entry cannot be moved aside either', async () => {
    const { logger, records } = recordingLogger();
    const store = await createCheckpointStore(dir, logger);
    await fsp.mkdir(path.join(dir, `${ID}.json`));
    const spy = jest.spyOn(fsp, 'rename').mockRejectedValue(errnoError('EROFS'));
    try {
      await expect(store.read(ID)).resolves.toBeUndefined();
    } finally {
      spy.mockRestore();
    }
    expect(records.some((r) => r.level === 'error' && /EROFS/.test(String(r.error)))).toBe(true);
  });

  it('sets aside a checkpoint that belongs to another sandbox', async () => {
    const { logger, records } = recordingLogger();
    const store = await createCheckpointStore(dir, logger);
    const other = 'b'.repeat(64);
    // a well-formed checkpoint with a valid checksum, but stored under the wrong id (e.g. copied by hand)
    await store.write(ID, { ...body, crishim: { ...body.crishim!, sandbox_id: other } });
    expect(await store.read(ID)).toBeUndefined();
    expect(await fsp.readdir(path.join(dir, 'corrupt'))).toHaveLength(1);
    expect(await store.list()).toEqual([]);
    expect(records.some((r) => String(r.reason).includes(`belongs to sandbox ${other}`))).toBe(true);
  });
});
