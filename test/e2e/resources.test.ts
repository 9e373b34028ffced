import { existsSync, promises as fsp } from 'fs';
import { status } from '@grpc/grpc-js';
import {
  BUSYBOX,
  call,
  codeOf,
  containersOfPod,
  docker,
  podConfig,
  runLoggedPod,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';
import { CGROUP_V2, cgroupDirOf } from '../support/cgroups';

/**
 * Resources and hostile config against the real Docker Engine. On cgroup v1 (the test VM)
 * resources.unified must be refused; on cgroup v2 (test/cgroup2) it must reach the
 * container's cgroup files.
 */
jest.setTimeout(180_000);

let h: Crishim;
let pod: { id: string; config: Record<string, unknown> };
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 232 });
  pod = await runLoggedPod(h, 'res');
});
afterAll(async () => {
  if (pod) {
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: pod.id }).catch(() => undefined);
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: pod.id }).catch(() => undefined);
  }
  await teardown(h);
});

const onV1 = CGROUP_V2 ? it.skip : it;
const onV2 = CGROUP_V2 ? it : it.skip;

/** A container's cgroup directory for `controller` (the unified one on v2). */
async function cgroupDir(id: string, controller: string): Promise<string | undefined> {
  return cgroupDirOf((await docker.getContainer(id).inspect()).State.Pid, controller);
}

function create(name: string, resources: Record<string, unknown>): Promise<{ container_id: string }> {
  return call(h.runtime, 'CreateContainer', {
    pod_sandbox_id: pod.id,
    config: {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX },
      command: ['sleep', '600'],
      log_path: `${name}/0.log`,
      linux: { resources },
    },
    sandbox_config: pod.config,
  });
}

describe('container resources on this host', () => {
  onV1('refuses resources.unified on cgroup v1 without creating anything', async () => {
    const before = (await containersOfPod((pod.config.metadata as { uid: string }).uid)).length;
    const err = await codeOf(create('unified', { unified: { 'memory.max': '67108864' } }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/resources\.unified needs cgroup v2/);
    expect((await containersOfPod((pod.config.metadata as { uid: string }).uid)).length).toBe(before);
  });

  onV2('writes resources.unified into the container cgroup on cgroup v2', async () => {
    const unified = { 'memory.max': '67108864', 'pids.max': '50', 'cpu.max': '50000 100000', 'cpu.weight': '300' };
    const { container_id: id } = await create('unified', { unified });
    await call(h.runtime, 'StartContainer', { container_id: id });
    const dir = await cgroupDir(id, '');
    expect(dir).toContain(id);
    const read = async (file: string): Promise<string> => (await fsp.readFile(`${dir}/${file}`, 'utf8')).trim();
    for (const [file, value] of Object.entries(unified)) expect([file, await read(file)]).toEqual([file, value]);
    await call(h.runtime, 'StopContainer', { container_id: id, timeout: 1 });
    await call(h.runtime, 'RemoveContainer', { container_id: id });
  });

  it('writes hugepage limits where the host has a hugetlb controller, and says once where it has none', async () => {
    const { container_id: id } = await create('huge', {
      memory_limit_in_bytes: '67108864',
      hugepage_limits: [{ page_size: '2MB', limit: '0' }],
    });
    await call(h.runtime, 'StartContainer', { container_id: id });
    const dir = await cgroupDir(id, 'hugetlb');
    const file = dir && `${dir}/hugetlb.2MB.${CGROUP_V2 ? 'max' : 'limit_in_bytes'}`;
    // this VM has no hugetlb controller; the cgroup v2 VM has one
    const enforced = file !== undefined && existsSync(file);
    const limit = async (): Promise<string> => (await fsp.readFile(file as string, 'utf8')).trim();
    const st = (await call(h.runtime, 'ContainerStatus', { container_id: id })).status;
    expect(st?.state).toBe('CONTAINER_RUNNING');
    expect(st?.resources?.linux?.memory_limit_in_bytes).toBe('67108864');
    // what is reported is what the cgroup holds (every page size the host has): nothing where it could not be written
    expect(st?.resources?.linux?.hugepage_limits).toEqual(
      enforced ? expect.arrayContaining([{ page_size: '2MB', limit: '0' }]) : [],
    );
    if (enforced) expect(await limit()).toBe('0');
    await call(h.runtime, 'UpdateContainerResources', {
      container_id: id,
      linux: { memory_limit_in_bytes: '134217728', hugepage_limits: [{ page_size: '2MB', limit: '4194304' }] },
    });
    expect((await docker.getContainer(id).inspect()).HostConfig.Memory).toBe(134217728);
    if (enforced) expect(await limit()).toBe('4194304');
    await call(h.runtime, 'UpdateContainerResources', {
      container_id: id,
      linux: { hugepage_limits: [{ page_size: '2MB', limit: '0' }] },
    });
    // said once per daemon, not per container or call
    const log = await fsp.readFile(h.logFile, 'utf8');
    expect(log.match(/no hugetlb cgroup controller/g) ?? []).toHaveLength(enforced ? 0 : 1);
    await call(h.runtime, 'StopContainer', { container_id: id, timeout: 1 });
    await call(h.runtime, 'RemoveContainer', { container_id: id });
  });

  it('refuses malformed hugepage limits and cpusets, naming the field', async () => {
    const bad = await codeOf(create('badhuge', { hugepage_limits: [{ page_size: '2M', limit: '0' }] }));
    expect(bad).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringMatching(/hugepage_limits\[0\]\.page_size/),
    });
    const cpus = await codeOf(create('badcpus', { cpuset_cpus: '0-' }));
    expect(cpus).toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringMatching(/resources\.cpuset_cpus/),
    });
  });
});

describe('hostile pod config', () => {
  it.each([
    [
      'config.dns_config.servers[0]',
      { dns_config: { servers: ['10.0.0.1\nnameserver 6.6.6.6'], searches: [], options: [] } },
    ],
    ['config.dns_config.options[0]', { dns_config: { servers: [], searches: [], options: ['ndots:1 debug'] } }],
    ['config.linux.cgroup_parent', { linux: { cgroup_parent: '/kubepods/../../escape' } }],
    ['config.linux.sysctls', { linux: { sysctls: { 'net.core.somaxconn': '1\nkernel.panic=1' } } }],
  ])('RunPodSandbox refuses %s', async (field, extra) => {
    const config = podConfig('hostile', extra);
    const err = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toContain(field);
    expect(await containersOfPod((config.metadata as { uid: string }).uid)).toEqual([]);
  });
});
