import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import winston from 'winston';
import { createCheckpointStore, type CheckpointBody } from '../../src/checkpoint/store';

const quiet = winston.createLogger({ silent: true });
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
    const foreign = { version: 'v1', name: 'old', namespace: 'kube-system', data: { port_mappings: null, host_network: true }, checksum: 123456 };
    await fsp.writeFile(path.join(dir, `${ID}.json`), JSON.stringify(foreign));
    expect(await store.read(ID)).toMatchObject({ name: 'old', data: { host_network: true } });
  });

  it('refuses ids that could escape the directory', async () => {
    const store = await createCheckpointStore(dir, quiet);
    await expect(store.read('../../etc/passwd')).rejects.toThrow(/invalid sandbox id/);
  });
});
