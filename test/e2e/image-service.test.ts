/**
 * ImageService end to end: the built daemon against real Docker and local registries
 * (one open, one with basic auth). Every image this file pushes has its own name and a
 * unique label, so removing by id never touches shared test images.
 */
import { promises as fsp } from 'fs';
import * as net from 'net';
import { randomBytes } from 'crypto';
import { status } from '@grpc/grpc-js';
import { BUSYBOX, call, codeOf, collect, docker, startCrishim, teardown, waitForLog, type Crishim } from './harness';
import { startRegistry, startStallingProxy, type Registry } from './registry';

jest.setTimeout(180_000);

const RUN = `${process.pid}-${randomBytes(3).toString('hex')}`;
const AUTH = { user: 'crishim', password: `s3cret-${RUN}` };
const PAUSE = 'registry.k8s.io/pause:3.10';

let h: Crishim;
let open: Registry;
let locked: Registry;

const spec = (image: string) => ({ image });
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Builds an image of its own (busybox + label + USER), pushes it as `<registry>/<name>`, drops the local copy. */
async function publish(
  reg: Registry,
  name: string,
  opts: { user?: string; auth?: { username: string; password: string } } = {},
): Promise<string> {
  const ref = `${reg.host}/${name}`;
  const [repo, tag] = ref.split(/:(?=[^:/]+$)/);
  const tmp = await docker.createContainer({ Image: BUSYBOX, Cmd: ['true'] });
  const changes = [`LABEL crishim.test=${name}-${RUN}`, ...(opts.user ? [`USER ${opts.user}`] : [])];
  await tmp.commit({ repo, tag, changes });
  await tmp.remove();
  // Docker wants an X-Registry-Auth header on every push, even an anonymous one
  const stream = await docker.getImage(ref).push({ authconfig: { ...(opts.auth ?? {}), serveraddress: reg.host } });
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: Array<{ error?: string }>) => {
      const failed = err?.message ?? out.find((o) => o.error)?.error;
      if (failed) reject(new Error(`push ${ref}: ${failed}`));
      else resolve();
    }),
  );
  await docker.getImage(ref).remove();
  return ref;
}

async function dockerHas(ref: string): Promise<boolean> {
  try {
    await docker.getImage(ref).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

/** Pulls of `repoPath:tag` that reached the registry: Docker starts each with HEAD /v2/<repo>/manifests/<tag>. */
async function manifestHeads(reg: Registry, repoPath: string, tag: string): Promise<number> {
  return (await reg.requests(new RegExp(`"HEAD /v2/${escape(repoPath)}/manifests/${escape(tag)} HTTP/1.1" 200 `)))
    .length;
}

beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 212, args: ['--network-plugin', 'none'] });
  open = await startRegistry();
  locked = await startRegistry(AUTH);
});

afterAll(async () => {
  // every image pushed or pulled here has RUN in its name
  for (const img of await docker.listImages().catch(() => [])) {
    const refs = [...(img.RepoTags ?? []), ...(img.RepoDigests ?? [])];
    if (refs.some((r) => r.includes(RUN))) {
      await docker
        .getImage(img.Id)
        .remove({ force: true })
        .catch(() => undefined);
    }
  }
  await open?.stop();
  await locked?.stop();
  await teardown(h);
});

describe('PullImage, ImageStatus, ListImages, RemoveImage against a local registry', () => {
  let ref: string;
  let id: string;

  it('coalesces two concurrent pulls into one Docker pull and answers the image id', async () => {
    ref = await publish(open, `crishim-e2e/pull-${RUN}:v1`, { user: '1234:5678' });
    expect((await call(h.image, 'ImageStatus', { image: spec(ref) })).image).toBeNull();

    const [a, b] = await Promise.all([
      call(h.image, 'PullImage', { image: spec(ref) }),
      call(h.image, 'PullImage', { image: spec(ref) }),
    ]);
    id = (await docker.getImage(ref).inspect()).Id;
    expect(a.image_ref).toBe(id);
    expect(b.image_ref).toBe(id);
    // the registry saw one pull, and crishim says the second request joined the first
    expect(await manifestHeads(open, `crishim-e2e/pull-${RUN}`, 'v1')).toBe(1);
    const log = await fsp.readFile(h.logFile, 'utf8');
    expect(log.match(new RegExp(`pulling image.*${escape(ref)}`, 'g'))).toHaveLength(1);
    expect(log).toMatch(new RegExp(`joining an in-flight pull.*${escape(ref)}`));

    // a later pull is a new Docker pull (nothing stays coalesced)
    expect((await call(h.image, 'PullImage', { image: spec(ref) })).image_ref).toBe(id);
    expect(await manifestHeads(open, `crishim-e2e/pull-${RUN}`, 'v1')).toBe(2);
  });

  it('reports the image by tag, id, id prefix and digest, with uid, digests and verbose info', async () => {
    const st = await call(h.image, 'ImageStatus', { image: spec(ref), verbose: true });
    expect(st.image?.id).toBe(id);
    expect(st.image?.repo_tags).toEqual([ref]);
    expect(st.image?.repo_digests?.[0]).toMatch(
      new RegExp(`^${escape(open.host)}/crishim-e2e/pull-${RUN}@sha256:[0-9a-f]{64}$`),
    );
    expect(Number(st.image?.size)).toBeGreaterThan(0);
    expect(st.image?.uid?.value).toBe('1234');
    expect(st.image?.username).toBe('');
    expect(st.image?.spec?.image).toBe(id);
    expect(st.image?.pinned).toBe(false);
    const info = JSON.parse(st.info?.info ?? '{}') as {
      os?: string;
      config?: { User?: string; Labels?: Record<string, string> };
    };
    expect(info.os).toBe('linux');
    expect(info.config?.Labels?.['crishim.test']).toBe(`crishim-e2e/pull-${RUN}:v1-${RUN}`);
    for (const other of [id, id.slice('sha256:'.length, 'sha256:'.length + 12), st.image?.repo_digests?.[0] ?? 'x']) {
      expect((await call(h.image, 'ImageStatus', { image: spec(other) })).image?.id).toBe(id);
    }
  });

  it('lists the image, alone with a filter, and streams the same list', async () => {
    const all = await call(h.image, 'ListImages', {});
    const mine = all.images?.find((i) => i.id === id);
    expect(mine?.repo_tags).toEqual([ref]);
    expect(mine?.repo_digests).toHaveLength(1);
    expect(all.images?.find((i) => i.repo_tags?.includes(PAUSE))?.pinned).toBe(true);
    expect(all.images?.some((i) => i.repo_tags?.includes('<none>:<none>'))).toBe(false);
    expect((await call(h.image, 'ListImages', { filter: { image: spec(ref) } })).images?.map((i) => i.id)).toEqual([
      id,
    ]);
    expect(
      (await call(h.image, 'ListImages', { filter: { image: spec(`${open.host}/crishim-e2e/absent-${RUN}:v1`) } }))
        .images ?? [],
    ).toEqual([]);

    const streamed = (await collect(h.image.StreamImages({}))).flatMap((m) => m.images ?? []);
    expect(streamed.map((i) => i.id).sort()).toEqual((all.images ?? []).map((i) => i.id).sort());
    const filtered = (await collect(h.image.StreamImages({ filter: { image: spec(ref) } }))).flatMap(
      (m) => m.images ?? [],
    );
    expect(filtered.map((i) => i.id)).toEqual([id]);
  });

  it('removes by id with every tag, idempotently; then the status is empty', async () => {
    const [repo] = ref.split(/:(?=[^:/]+$)/);
    await docker.getImage(ref).tag({ repo, tag: 'second' });
    await call(h.image, 'RemoveImage', { image: spec(id) });
    expect(await dockerHas(id)).toBe(false);
    expect(await dockerHas(ref)).toBe(false);
    expect(await dockerHas(`${repo}:second`)).toBe(false);
    expect(await call(h.image, 'ImageStatus', { image: spec(ref) })).toEqual({ image: null, info: {} });
    await expect(call(h.image, 'RemoveImage', { image: spec(id) })).resolves.toEqual({});
    await expect(call(h.image, 'RemoveImage', { image: spec(ref) })).resolves.toEqual({});
  });

  it('removes by tag only that tag, and the image with its last tag', async () => {
    const pulled = await call(h.image, 'PullImage', { image: spec(ref) });
    const [repo] = ref.split(/:(?=[^:/]+$)/);
    await docker.getImage(ref).tag({ repo, tag: 'keep' });
    await call(h.image, 'RemoveImage', { image: spec(ref) });
    expect(await dockerHas(ref)).toBe(false);
    const left = await call(h.image, 'ImageStatus', { image: spec(pulled.image_ref) });
    expect(left.image?.repo_tags).toEqual([`${repo}:keep`]);
    await call(h.image, 'RemoveImage', { image: spec(`${repo}:keep`) });
    expect(await dockerHas(pulled.image_ref)).toBe(false);
  });
});

describe('pull errors carry the registry message and a fitting code', () => {
  it('NOT_FOUND for an unknown manifest, INVALID_ARGUMENT for a bad reference', async () => {
    const missing = await codeOf(
      call(h.image, 'PullImage', { image: spec(`${open.host}/crishim-e2e/no-such-${RUN}:v9`) }),
    );
    expect(missing.code).toBe(status.NOT_FOUND);
    expect(missing.details).toMatch(/manifest unknown/);
    expect(missing.details).not.toMatch(/HTTP code/);
    for (const bad of ['UPPER/Case::bad', 'a b', '']) {
      expect((await codeOf(call(h.image, 'PullImage', { image: spec(bad) }))).code).toBe(status.INVALID_ARGUMENT);
    }
    expect((await codeOf(call(h.image, 'PullImage', {}))).code).toBe(status.INVALID_ARGUMENT);
  });

  it('UNAVAILABLE when the registry does not answer', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const r = await codeOf(call(h.image, 'PullImage', { image: spec(`127.0.0.1:${port}/crishim-e2e/x:v1`) }));
    expect(r.code).toBe(status.UNAVAILABLE);
    expect(r.details).toMatch(/connection refused/);
  });

  it('aborts its Docker pull when the caller gives up, and does not reuse it', async () => {
    // the manifest comes through, blob downloads hang: the pull is stuck mid-download until cancelled
    await publish(open, `crishim-e2e/hang-${RUN}:v1`);
    const proxy = await startStallingProxy(open);
    const ref = `${proxy.host}/crishim-e2e/hang-${RUN}:v1`;
    try {
      const r = await codeOf(call(h.image, 'PullImage', { image: spec(ref) }, 3000));
      expect(r.code).toBe(status.DEADLINE_EXCEEDED);
      expect(proxy.held().open).toBeGreaterThan(0);
      await waitForLog(h, new RegExp(`cancelling image pull.*${escape(ref)}`), 5000);
      expect(await dockerHas(ref)).toBe(false);
    } finally {
      await proxy.stop();
    }
    // a new request starts a new Docker pull (which now finds nothing listening) instead of
    // joining the abandoned one, which would hang until this call's deadline
    const again = await codeOf(call(h.image, 'PullImage', { image: spec(ref) }, 20_000));
    expect(again.code).toBe(status.UNAVAILABLE);
  });
});

describe('registry with basic auth', () => {
  let ref: string;
  beforeAll(async () => {
    ref = await publish(locked, `crishim-e2e/private-${RUN}:v1`, {
      auth: { username: AUTH.user, password: AUTH.password },
    });
  });

  it('fails without credentials, saying authentication is needed', async () => {
    const r = await codeOf(call(h.image, 'PullImage', { image: spec(ref) }));
    expect(r.code).toBe(status.UNAUTHENTICATED);
    expect(r.details).toMatch(/no basic auth credentials|authentication required/);
  });

  it('fails with a wrong password, with the registry message', async () => {
    const r = await codeOf(
      call(h.image, 'PullImage', { image: spec(ref), auth: { username: AUTH.user, password: 'wrong' } }),
    );
    expect(r.code).toBe(status.UNAUTHENTICATED);
    expect(r.details).toMatch(/unauthorized: authentication required/);
    expect(await dockerHas(ref)).toBe(false);
  });

  it('pulls with username/password, and with auth (base64 user:password)', async () => {
    const a = await call(h.image, 'PullImage', {
      image: spec(ref),
      auth: { username: AUTH.user, password: AUTH.password },
    });
    expect(a.image_ref).toBe((await docker.getImage(ref).inspect()).Id);
    await call(h.image, 'RemoveImage', { image: spec(ref) });
    expect(await dockerHas(ref)).toBe(false);
    const b = await call(h.image, 'PullImage', {
      image: spec(ref),
      auth: { auth: Buffer.from(`${AUTH.user}:${AUTH.password}`).toString('base64') },
    });
    expect(b.image_ref).toBe(a.image_ref);
    await call(h.image, 'RemoveImage', { image: spec(b.image_ref) });
    expect(await dockerHas(b.image_ref)).toBe(false);
  });
});

describe('pinned images and image filesystem', () => {
  it('pins the configured pause image only', async () => {
    expect((await call(h.image, 'ImageStatus', { image: spec(PAUSE) })).image?.pinned).toBe(true);
    expect((await call(h.image, 'ImageStatus', { image: spec(BUSYBOX) })).image?.pinned).toBe(false);
  });

  it("reports Docker's data root with the layer bytes docker df counts", async () => {
    const df = async (): Promise<number> => ((await docker.df()) as { LayersSize: number }).LayersSize;
    const before = await df();
    const fs = await call(h.image, 'ImageFsInfo', {});
    const after = await df();
    const info = (await docker.info()) as { DockerRootDir: string };
    const img = fs.image_filesystems?.[0];
    expect(img?.fs_id?.mountpoint).toBe(info.DockerRootDir);
    const used = Number(img?.used_bytes?.value);
    // other tests may pull meanwhile: equal to df when nothing changed, else between the two readings
    if (before === after) expect(used).toBe(before);
    else expect(used).toBeGreaterThanOrEqual(Math.min(before, after));
    expect(Number(img?.inodes_used?.value)).toBeGreaterThan(0);
    expect(BigInt(img?.timestamp ?? '0')).toBeGreaterThan(BigInt(Date.now() - 60_000) * 1_000_000n);
    expect(fs.container_filesystems?.[0]?.fs_id?.mountpoint).toBe(info.DockerRootDir);
  });
});
