/** The CNI result cache: one atomic JSON file per sandbox. */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { CorruptCacheEntryError, createResultCache, type CacheEntry } from '../../src/network/result-cache';

let dir: string;
beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-netcache-'));
});
afterEach(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

const entry = (id: string, over: Partial<CacheEntry> = {}): CacheEntry => ({
  sandboxId: id,
  podName: 'web',
  podNamespace: 'prod',
  podUid: 'u',
  netns: '/proc/42/ns/net',
  ifName: 'eth0',
  portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }],
  config: {
    cniVersion: '0.4.0',
    name: 'crishim',
    plugins: [{ type: 'bridge', bridge: 'crishim0' }],
    file: '/etc/cni/net.d/10-crishim.conflist',
  },
  ...over,
});

it('round-trips an entry (before and after the result), lists it, and removes it', async () => {
  const cache = await createResultCache(path.join(dir, 'nested', 'cache'));
  const id = 'ab'.repeat(32);
  await cache.write(entry(id));
  expect(await cache.read(id)).toEqual(entry(id));
  const done = entry(id, { result: { cniVersion: '0.4.0', ips: [{ address: '10.88.0.2/16' }] } });
  await cache.write(done);
  expect(await cache.read(id)).toEqual(done);
  expect(await cache.list()).toEqual([id]);
  // one file per sandbox, no temp files left behind, private to root
  const files = await fsp.readdir(path.join(dir, 'nested', 'cache'));
  expect(files).toEqual([`${id}.json`]);
  expect((await fsp.stat(path.join(dir, 'nested', 'cache', files[0]))).mode & 0o777).toBe(0o600);
  await cache.remove(id);
  await cache.remove(id); // idempotent
  expect(await cache.read(id)).toBeUndefined();
  expect(await cache.list()).toEqual([]);
});

it('survives a new instance on the same dir (a daemon restart)', async () => {
  const id = 'cd'.repeat(32);
  await (await createResultCache(dir)).write(entry(id, { result: { ips: [] } }));
  const again = await createResultCache(dir);
  expect(await again.read(id)).toEqual(entry(id, { result: { ips: [] } }));
});

it('lists only sandbox entries, never temp files of an interrupted write or strangers', async () => {
  const cache = await createResultCache(dir);
  const id = 'ef'.repeat(32);
  await cache.write(entry(id));
  await fsp.writeFile(path.join(dir, `${'ab'.repeat(32)}.json.tmp-1-2`), '{');
  await fsp.writeFile(path.join(dir, 'README.json'), '{}');
  expect(await cache.list()).toEqual([id]);
});

it('tells a corrupt entry apart from a missing one', async () => {
  const cache = await createResultCache(dir);
  const id = '12'.repeat(32);
  await fsp.writeFile(path.join(dir, `${id}.json`), '{"sandboxId":');
  await expect(cache.read(id)).rejects.toBeInstanceOf(CorruptCacheEntryError);
  await fsp.writeFile(path.join(dir, `${id}.json`), JSON.stringify(entry('34'.repeat(32))));
  await expect(cache.read(id)).rejects.toThrow(/another sandbox id/);
  expect(await cache.read('56'.repeat(32))).toBeUndefined();
});

it('never leaves its directory for a bad id', async () => {
  const cache = await createResultCache(dir);
  expect(await cache.read('../../etc/passwd')).toBeUndefined();
  await expect(cache.write(entry('../x'))).rejects.toThrow(/invalid sandbox id/);
  await expect(cache.remove('../x')).rejects.toThrow(/invalid sandbox id/);
});
