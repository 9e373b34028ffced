import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import Docker from 'dockerode';
import winston from 'winston';
import { imageUser, pinnedMatcher } from '../../src/images/image-common';
import { imageFsInfoRpc, layerStoreBytes } from '../../src/rpc/image-fs-info';
import { refersToId } from '../../src/rpc/remove-image';
import { imageHandlers } from '../../src/rpc/image-service';
import type { ServiceDeps } from '../../src/service-deps';
import { pullImage } from '../../src/docker/images';
import { DockerodeEngine } from '../../src/docker/dockerode-engine';
import { FakeEngine } from '../support/fake-engine';
import type { CallContext } from '../../src/server/rpc';

const log = winston.createLogger({ silent: true });
const ctx: CallContext = { signal: new AbortController().signal, method: 'X', log, annotate: () => undefined };
const ID = 'sha256:' + '1f'.repeat(32);
const spec = (image: string) => ({
  image,
  annotations: {},
  user_specified_image: '',
  runtime_handler: '',
  image_ref: '',
});

/** A Docker with one image (tagged t:1 and t:2, USER 1000:1000) and a <none> one; removals are recorded, not done. */
function fakeDeps(over: Partial<ServiceDeps> | Record<string, unknown> = {}) {
  const docker = new FakeEngine();
  docker.addImage({
    Id: ID,
    RepoTags: ['t:1', 't:2'],
    RepoDigests: ['t@sha256:' + 'cd'.repeat(32)],
    Size: 1234,
    Config: { User: '1000:1000' },
    Os: 'linux',
  });
  docker.addImage({
    Id: 'sha256:' + '00'.repeat(32),
    RepoTags: ['<none>:<none>'],
    RepoDigests: ['<none>@<none>'],
    Size: 1,
  });
  const removed: Array<{ name: string; force: boolean }> = [];
  docker.removeImage = async (ref, o = {}) => {
    removed.push({ name: ref, force: o.force ?? false });
    return [{ Untagged: ref }];
  };
  // only what the image RPCs read: the rest of ServiceDeps is never touched
  const deps = {
    config: { podInfraContainerImage: 'docker.io/library/t:2' },
    logger: log,
    docker,
    ...over,
  } as unknown as ServiceDeps;
  return { deps, docker, removed, listCalls: () => docker.count('listImages') };
}

describe('ImageStatus', () => {
  it('finds the image by tag, id, id prefix and digest, with uid and pinned', async () => {
    const { deps } = fakeDeps();
    const h = imageHandlers(deps);
    for (const ref of ['t:1', ID, ID.slice(7, 19), 't@sha256:' + 'cd'.repeat(32)]) {
      const res = await h.ImageStatus!({ image: spec(ref), verbose: false }, ctx);
      expect(res.image).toMatchObject({
        id: ID,
        repo_tags: ['t:1', 't:2'],
        size: '1234',
        uid: { value: '1000' },
        username: '',
        spec: { image: ID },
        pinned: true,
      });
      expect(res.info).toEqual({});
    }
  });

  it('answers an empty response for an absent image, verbose info for a present one', async () => {
    const h = imageHandlers(fakeDeps().deps);
    expect(await h.ImageStatus!({ image: spec('nope:1'), verbose: true }, ctx)).toEqual({ image: null, info: {} });
    const v = await h.ImageStatus!({ image: spec('t:1'), verbose: true }, ctx);
    expect(JSON.parse(v.info!.info)).toMatchObject({ id: ID, os: 'linux', config: { User: '1000:1000' } });
    await expect(h.ImageStatus!({ image: spec('Bad Ref'), verbose: false }, ctx)).rejects.toMatchObject({
      kind: 'invalid-argument',
    });
  });

  it('splits USER into uid or username', () => {
    expect(imageUser('1002')).toEqual({ uid: { value: '1002' }, username: '' });
    expect(imageUser('1003:1004')).toEqual({ uid: { value: '1003' }, username: '' });
    expect(imageUser('www-data:1004')).toEqual({ uid: null, username: 'www-data' });
    expect(imageUser('')).toEqual({ uid: null, username: '' });
  });

  it('pins the pause image by tag or digest, however spelled', () => {
    const img = {
      Id: ID,
      RepoTags: ['registry.k8s.io/pause:3.10', 'busybox:latest'],
      RepoDigests: ['busybox@sha256:' + 'ee'.repeat(32)],
      Size: 1,
    };
    expect(pinnedMatcher('registry.k8s.io/pause:3.10')(img)).toBe(true);
    expect(pinnedMatcher('registry.k8s.io/pause:3.9')(img)).toBe(false);
    expect(pinnedMatcher('docker.io/library/busybox')(img)).toBe(true);
    expect(pinnedMatcher('docker.io/library/busybox@sha256:' + 'ee'.repeat(32))(img)).toBe(true);
    expect(pinnedMatcher('busybox@sha256:' + 'ef'.repeat(32))(img)).toBe(false);
  });
});

describe('ListImages / StreamImages', () => {
  it('lists with one Docker call, dropping <none> placeholders; a filter names one image', async () => {
    const f = fakeDeps();
    const h = imageHandlers(f.deps);
    const all = await h.ListImages!({ filter: null }, ctx);
    expect(f.listCalls()).toBe(1);
    expect(all.images?.map((i) => i.repo_tags)).toEqual([['t:1', 't:2'], []]);
    expect(all.images?.[1].repo_digests).toEqual([]);
    expect((await h.ListImages!({ filter: { image: spec('t:2') } }, ctx)).images?.map((i) => i.id)).toEqual([ID]);
    expect((await h.ListImages!({ filter: { image: spec('gone:1') } }, ctx)).images).toEqual([]);
    const sent: number[] = [];
    await h.StreamImages!({ filter: null }, ctx, async (m) => void sent.push(m.images?.length ?? 0));
    expect(sent).toEqual([2]);
  });
});

describe('RemoveImage', () => {
  it('removes by id with force (all tags), by tag without, and is idempotent', async () => {
    const f = fakeDeps();
    const h = imageHandlers(f.deps);
    await h.RemoveImage!({ image: spec(ID.slice(7, 19)) }, ctx);
    await h.RemoveImage!({ image: spec('t:1') }, ctx);
    await expect(h.RemoveImage!({ image: spec('gone:1') }, ctx)).resolves.toEqual({});
    expect(f.removed).toEqual([
      { name: ID, force: true },
      { name: 't:1', force: false },
    ]);
    expect(refersToId(ID, ID)).toBe(true);
    expect(refersToId('1f1f1f', ID)).toBe(true);
    expect(refersToId('t:1', ID)).toBe(false);
    expect(refersToId('abcdef', ID)).toBe(false);
  });
});

describe('ImageFsInfo', () => {
  let root: string;
  beforeAll(async () => {
    root = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-imagefs-'));
    for (const [chain, size] of [
      ['a', '100'],
      ['b', '250'],
      ['c', ''],
    ] as const) {
      await fsp.mkdir(path.join(root, 'image', 'overlay2', 'layerdb', 'sha256', chain), { recursive: true });
      if (size) await fsp.writeFile(path.join(root, 'image', 'overlay2', 'layerdb', 'sha256', chain, 'size'), size);
    }
  });
  afterAll(() => fsp.rm(root, { recursive: true, force: true }));

  it('sums the layer store sizes, each layer once', async () => {
    expect(await layerStoreBytes(root)).toBe(350);
    expect(await layerStoreBytes(path.join(root, 'missing'))).toBeUndefined();
  });

  it('reads a layer once, sees layers come and go, reads a size file that was missing again', async () => {
    const store = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-imagefs-kept-'));
    const layer = (chain: string): string => path.join(store, 'image', 'overlay2', 'layerdb', 'sha256', chain);
    try {
      for (const chain of ['a', 'b', 'late']) await fsp.mkdir(layer(chain), { recursive: true });
      await fsp.writeFile(path.join(layer('a'), 'size'), '100');
      await fsp.writeFile(path.join(layer('b'), 'size'), '250');
      const known = new Map<string, number>();
      expect(await layerStoreBytes(store, known)).toBe(350);
      // a kept size is not read again (Docker never rewrites one)
      await fsp.writeFile(path.join(layer('a'), 'size'), '999');
      await fsp.writeFile(path.join(layer('late'), 'size'), '7');
      expect(await layerStoreBytes(store, known)).toBe(357);
      await fsp.rm(layer('b'), { recursive: true });
      await fsp.mkdir(layer('c'), { recursive: true });
      await fsp.writeFile(path.join(layer('c'), 'size'), '40');
      expect(await layerStoreBytes(store, known)).toBe(147);
      expect([...known.keys()].map((f) => path.basename(path.dirname(f))).sort()).toEqual(['a', 'c', 'late']);
    } finally {
      await fsp.rm(store, { recursive: true, force: true });
    }
  });

  it('reports the data root with layer bytes and inodes; falls back to docker df without a local layer store', async () => {
    const engine = { current: () => ({ dockerRootDir: root }), refresh: async () => ({ dockerRootDir: root }) };
    const fs = await imageFsInfoRpc(fakeDeps({ engine }).deps)();
    expect(fs.image_filesystems?.[0]).toMatchObject({ fs_id: { mountpoint: root }, used_bytes: { value: '350' } });
    expect(Number(fs.image_filesystems?.[0].inodes_used?.value)).toBeGreaterThan(0);
    expect(fs.container_filesystems?.[0].fs_id?.mountpoint).toBe(root);

    const remote = path.join(root, 'not-here');
    const engine2 = { current: () => ({ dockerRootDir: remote }), refresh: async () => ({ dockerRootDir: remote }) };
    const f = fakeDeps({ engine: engine2 });
    f.docker.layersSize = 777;
    expect((await imageFsInfoRpc(f.deps)()).image_filesystems?.[0].used_bytes?.value).toBe('777');
  });
});

describe('pullImage', () => {
  /** A Docker whose pull answers a progress stream with the given lines. */
  function dockerStreaming(lines: object[]): Docker {
    const d = new Docker({ socketPath: '/nonexistent' });
    (d as unknown as { pull: unknown }).pull = (
      _ref: string,
      _opts: unknown,
      cb: (e: unknown, s?: NodeJS.ReadableStream) => void,
    ) => {
      const s = new PassThrough();
      cb(null, s);
      setImmediate(() => s.end(lines.map((l) => JSON.stringify(l) + '\r\n').join('')));
    };
    return d;
  }

  it('fails on an error reported inside the progress stream, with its message and code', async () => {
    const d = dockerStreaming([
      { status: 'Pulling from a/b', id: 'v1' },
      {
        errorDetail: { message: 'unauthorized: authentication required' },
        error: 'unauthorized: authentication required',
      },
    ]);
    await expect(pullImage(new DockerodeEngine(d), 'r.io/a/b:v1', { logger: log })).rejects.toMatchObject({
      kind: 'unauthenticated',
      message: 'pull image r.io/a/b:v1: unauthorized: authentication required',
    });
  });

  it('succeeds on a clean stream', async () => {
    await expect(
      pullImage(
        new DockerodeEngine(dockerStreaming([{ status: 'Status: Image is up to date for r.io/a/b:v1' }])),
        'r.io/a/b:v1',
        { logger: log },
      ),
    ).resolves.toBeUndefined();
  });
});
