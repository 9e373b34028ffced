import { promises as fsp } from 'fs';
import { status } from '@grpc/grpc-js';
import { BUSYBOX, call, codeOf, docker, podConfig, startCrishim, teardown, type Crishim } from './harness';
import { startRegistry, type Registry } from './registry';

jest.setTimeout(180_000);

let h: Crishim;
let open: Registry;
let locked: Registry;
const AUTH = { user: 'crishim', password: 's3cret' };

/**
 * Pushes an image of its own (busybox plus a label, so removing it by id never
 * touches the shared test image) to a registry under `name`, and drops the local copy.
 */
async function publish(reg: Registry, name: string, auth?: { username: string; password: string }): Promise<string> {
  const ref = `${reg.host}/${name}`;
  const [repo, tag] = ref.split(/:(?=[^:/]+$)/);
  const tmp = await docker.createContainer({ Image: BUSYBOX, Cmd: ['true'] });
  await tmp.commit({ repo, tag, changes: `LABEL crishim.test=${name}` });
  await tmp.remove();
  // Docker wants an X-Registry-Auth header on every push, even an anonymous one
  const stream = await docker.getImage(ref).push({ authconfig: { ...(auth ?? {}), serveraddress: reg.host } });
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())),
  );
  await docker.getImage(ref).remove();
  return ref;
}

beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 204, args: ['--network-plugin', 'none'] });
  open = await startRegistry();
  locked = await startRegistry(AUTH);
});
afterAll(async () => {
  await open?.stop();
  await locked?.stop();
  await teardown(h);
});

describe('ImageService against a local registry', () => {
  it('pulls, reports, lists and removes an image by id with all its tags', async () => {
    const ref = await publish(open, 'crishim/pull-test:v1');
    expect((await call(h.image, 'ImageStatus', { image: { image: ref } })).image).toBeNull();

    // two concurrent pulls of the same image are one Docker pull
    const [a, b] = await Promise.all([
      call(h.image, 'PullImage', { image: { image: ref } }),
      call(h.image, 'PullImage', { image: { image: ref } }),
    ]);
    expect(a.image_ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(b.image_ref).toBe(a.image_ref);
    const log = await fsp.readFile(h.logFile, 'utf8');
    expect(log.match(new RegExp(`pulling image.*${ref.replace(/[.]/g, '\\.')}`, 'g'))?.length).toBe(1);

    const st = await call(h.image, 'ImageStatus', { image: { image: ref }, verbose: true });
    expect(st.image?.id).toBe(a.image_ref);
    expect(st.image?.repo_tags).toContain(ref);
    expect(st.image?.repo_digests?.[0]).toMatch(new RegExp(`^${open.host}/crishim/pull-test@sha256:`));
    expect(Number(st.image?.size)).toBeGreaterThan(0);
    expect(st.image?.pinned).toBe(false);
    expect(JSON.parse(st.info?.info ?? '{}').os).toBe('linux');
    // the same image by id and by digest
    expect((await call(h.image, 'ImageStatus', { image: { image: a.image_ref } })).image?.id).toBe(a.image_ref);
    expect(
      (await call(h.image, 'ImageStatus', { image: { image: st.image?.repo_digests?.[0] ?? '' } })).image?.id,
    ).toBe(a.image_ref);

    const all = await call(h.image, 'ListImages', {});
    expect(all.images?.some((i) => i.id === a.image_ref && i.repo_tags?.includes(ref))).toBe(true);
    const one = await call(h.image, 'ListImages', { filter: { image: { image: ref } } });
    expect(one.images?.map((i) => i.id)).toEqual([a.image_ref]);

    // a second tag; removing by id removes both
    const [repo] = ref.split(/:(?=[^:/]+$)/);
    await docker.getImage(ref).tag({ repo, tag: 'second' });
    await call(h.image, 'RemoveImage', { image: { image: a.image_ref } });
    expect((await call(h.image, 'ImageStatus', { image: { image: ref } })).image).toBeNull();
    expect((await call(h.image, 'ImageStatus', { image: { image: `${repo}:second` } })).image).toBeNull();
    // idempotent
    await expect(call(h.image, 'RemoveImage', { image: { image: a.image_ref } })).resolves.toEqual({});
  });

  it('marks the pause image as pinned', async () => {
    const st = await call(h.image, 'ImageStatus', { image: { image: 'registry.k8s.io/pause:3.10' } });
    expect(st.image?.pinned).toBe(true);
  });

  it('reports the registry error for a missing image', async () => {
    const r = await codeOf(call(h.image, 'PullImage', { image: { image: `${open.host}/crishim/no-such-image:v9` } }));
    expect(r.code).toBe(status.NOT_FOUND);
    expect(r.details).toMatch(/manifest unknown|not found/i);
    expect((await codeOf(call(h.image, 'PullImage', { image: { image: 'UPPER/Case::bad' } }))).code).toBe(
      status.INVALID_ARGUMENT,
    );
    expect((await codeOf(call(h.image, 'PullImage', {}))).code).toBe(status.INVALID_ARGUMENT);
  });

  it('pulls with basic auth, and says why without it or with wrong credentials', async () => {
    const ref = await publish(locked, 'crishim/private:v1', { username: AUTH.user, password: AUTH.password });
    const none = await codeOf(call(h.image, 'PullImage', { image: { image: ref } }));
    expect(none.code).toBe(status.UNAUTHENTICATED);
    expect(none.details).toMatch(/auth/i);
    const wrong = await codeOf(
      call(h.image, 'PullImage', { image: { image: ref }, auth: { username: AUTH.user, password: 'nope' } }),
    );
    expect(wrong.code).toBe(status.UNAUTHENTICATED);
    expect(wrong.details).toMatch(/auth|unauthorized/i);
    const ok = await call(h.image, 'PullImage', {
      image: { image: ref },
      auth: { auth: Buffer.from(`${AUTH.user}:${AUTH.password}`).toString('base64') },
    });
    expect(ok.image_ref).toMatch(/^sha256:/);
    await call(h.image, 'RemoveImage', { image: { image: ref } });
    expect((await call(h.image, 'ImageStatus', { image: { image: ref } })).image).toBeNull();
  });

  it('names a container created from an image id by its tag and repo digest, or as the user named it', async () => {
    const ref = await publish(open, 'crishim/named:v1');
    const { image_ref: id } = await call(h.image, 'PullImage', { image: { image: ref } });
    const config = podConfig('image-names');
    const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
    try {
      // a kubelet before 1.31 creates from the image id; newer ones add what the pod spec said
      const create = (name: string, image: Record<string, string>) =>
        call(h.runtime, 'CreateContainer', {
          pod_sandbox_id: pod,
          config: { metadata: { name }, image, command: ['true'] },
          sandbox_config: config,
        });
      const byId = await create('by-id', { image: id });
      const asUser = await create('as-user', { image: id, user_specified_image: ref });
      const a = (await call(h.runtime, 'ContainerStatus', { container_id: byId.container_id })).status;
      expect(a?.image?.image).toBe(ref);
      expect(a?.image_ref).toMatch(new RegExp(`^${open.host}/crishim/named@sha256:[0-9a-f]{64}$`));
      expect(a?.image_id).toBe(id);
      const b = (await call(h.runtime, 'ContainerStatus', { container_id: asUser.container_id })).status;
      expect(b?.image).toEqual({
        image: ref,
        user_specified_image: ref,
        annotations: {},
        runtime_handler: '',
        image_ref: '',
      });
      expect(b?.image_ref).toBe(a?.image_ref);
      // the user's image is crishim's to keep, never a CRI label
      expect(Object.keys(b?.labels ?? {}).filter((k) => k.startsWith('io.crishim'))).toEqual([]);
    } finally {
      await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
      await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
      await docker.getImage(id).remove({ force: true });
    }
  });

  it("reports image filesystem usage of Docker's data root", async () => {
    const fs = await call(h.image, 'ImageFsInfo', {});
    const info = (await docker.info()) as { DockerRootDir: string };
    expect(fs.image_filesystems?.[0]?.fs_id?.mountpoint).toBe(info.DockerRootDir);
    expect(Number(fs.image_filesystems?.[0]?.used_bytes?.value)).toBeGreaterThan(0);
    expect(Number(fs.image_filesystems?.[0]?.inodes_used?.value)).toBeGreaterThan(0);
  });
});
