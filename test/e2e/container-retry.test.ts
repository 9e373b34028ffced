/**
 * The kubelet retries a CreateContainer whose answer it never got (e.g. crishim crashed right
 * after Docker created the container) with the same name and attempt: the never-started
 * leftover must not stay behind as an orphan, and a live container must never be touched.
 */
import { status } from '@grpc/grpc-js';
import {
  BUSYBOX,
  call,
  codeOf,
  containersOfPod,
  docker,
  podConfig,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';

jest.setTimeout(120_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 242 });
});
afterAll(() => teardown(h));

const exists = (id: string): Promise<boolean> =>
  docker
    .getContainer(id)
    .inspect()
    .then(
      () => true,
      (err: { statusCode?: number }) => {
        if (err.statusCode === 404) return false;
        throw err;
      },
    );

it('replaces a never-started leftover of the same name and refuses while a started one holds it', async () => {
  const config = podConfig('retry');
  const uid = (config.metadata as { uid: string }).uid;
  const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
  const create = async (): Promise<string> =>
    (
      await call(h.runtime, 'CreateContainer', {
        pod_sandbox_id: pod,
        config: { metadata: { name: 'app', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '300'] },
        sandbox_config: config,
      })
    ).container_id;

  const first = await create();
  const second = await create();
  expect(second).not.toBe(first);
  expect(await exists(first)).toBe(false);
  expect((await docker.getContainer(second).inspect()).Name).toBe(`/k8s_app_retry_crishim-e2e_${uid}_0`);

  await call(h.runtime, 'StartContainer', { container_id: second });
  // a started holder keeps its name and the retry is refused, as containerd's "name is reserved"
  const third = await codeOf(create());
  expect(third.code).toBe(status.ALREADY_EXISTS);
  expect(third.details).toContain(`is reserved for ${second}`);
  expect((await docker.getContainer(second).inspect()).State.Running).toBe(true);

  const listed = (await call(h.runtime, 'ListContainers', { filter: { pod_sandbox_id: pod } })).containers ?? [];
  expect(listed.map((c) => c.id)).toEqual([second]);

  await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod });
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod });
  expect(await containersOfPod(uid)).toEqual([]);
});
