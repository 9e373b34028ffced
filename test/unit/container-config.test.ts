import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { status } from '@grpc/grpc-js';
import { dockerBinds, dockerResources, resolveLogPath, stopSignalOf } from '../../src/cri/container-config';
import { CriError } from '../../src/server/errors';

const deps = { config: { rootDirectory: '/var/lib/crishim' } } as Parameters<typeof dockerBinds>[1];

function mount(extra: Record<string, unknown>): Parameters<typeof dockerBinds>[0][number] {
  return {
    container_path: '/data',
    host_path: os.tmpdir(),
    readonly: false,
    selinux_relabel: false,
    propagation: 'PROPAGATION_PRIVATE',
    uidMappings: [],
    gidMappings: [],
    recursive_read_only: false,
    image: null,
    image_sub_path: '',
    mount_options: [],
    ...extra,
  } as Parameters<typeof dockerBinds>[0][number];
}

function invalid(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof CriError && err.code === status.INVALID_ARGUMENT) return err.message;
    throw err;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

describe('bind mounts', () => {
  it('maps readonly, relabel and propagation', () => {
    const tmp = os.tmpdir();
    expect(dockerBinds([mount({ readonly: true, selinux_relabel: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' })], deps)).toEqual([
      `${tmp}:/data:ro,Z,rslave`,
    ]);
    expect(dockerBinds([mount({ propagation: 'PROPAGATION_BIDIRECTIONAL' })], deps)).toEqual([`${tmp}:/data:rw,rshared`]);
  });

  it('refuses missing host paths, relative targets and crishim state', () => {
    expect(invalid(() => dockerBinds([mount({ host_path: '/no/such/dir' })], deps))).toMatch(/does not exist/);
    expect(invalid(() => dockerBinds([mount({ container_path: 'rel' })], deps))).toMatch(/container_path/);
    expect(invalid(() => dockerBinds([mount({ host_path: '/var/lib/crishim/sandbox' })], deps))).toMatch(/state directory/);
  });
});

describe('log paths', () => {
  it('joins inside the pod log directory and refuses escapes', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-pods-'));
    expect(resolveLogPath(dir, 'c/0.log')).toBe(path.join(dir, 'c', '0.log'));
    expect(resolveLogPath('', 'x.log')).toBe('');
    expect(invalid(() => resolveLogPath(dir, '../x.log'))).toMatch(/log_path/);
    expect(invalid(() => resolveLogPath(dir, '/etc/passwd'))).toMatch(/log_path/);
    expect(invalid(() => resolveLogPath('relative', 'x.log'))).toMatch(/log_directory/);
    await fsp.rm(dir, { recursive: true });
  });
});

describe('resources', () => {
  const r = (extra: Record<string, string>): Parameters<typeof dockerResources>[0] =>
    ({ cpu_period: '0', cpu_quota: '0', cpu_shares: '0', memory_limit_in_bytes: '0', oom_score_adj: '0', cpuset_cpus: '', cpuset_mems: '', hugepage_limits: [], unified: {}, memory_swap_limit_in_bytes: '0', ...extra }) as Parameters<typeof dockerResources>[0];

  it('maps CRI resources to Docker, swap following memory', () => {
    expect(dockerResources(r({ cpu_shares: '512', cpu_quota: '50000', cpu_period: '100000', memory_limit_in_bytes: '67108864', cpuset_cpus: '0' }), -1000)).toEqual({
      CpuShares: 512,
      CpuQuota: 50000,
      CpuPeriod: 100000,
      Memory: 67108864,
      MemorySwap: 67108864,
      CpusetCpus: '0',
    });
  });

  it('raises oom_score_adj to what the host allows', () => {
    expect(dockerResources(r({ oom_score_adj: '-997' }), 0).OomScoreAdj).toBe(0);
    expect(dockerResources(r({ oom_score_adj: '500' }), 0).OomScoreAdj).toBe(500);
  });

  it('refuses absurd values naming the field', () => {
    expect(invalid(() => dockerResources(r({ memory_limit_in_bytes: '-5' }), 0))).toMatch(/memory_limit_in_bytes/);
    expect(invalid(() => dockerResources(r({ oom_score_adj: '5000' }), 0))).toMatch(/oom_score_adj/);
    expect(invalid(() => dockerResources(r({ cpu_period: '5' }), 0))).toMatch(/cpu_period/);
    expect(invalid(() => dockerResources(r({ cpu_shares: '99999999999999999999' }), 0))).toMatch(/cpu_shares/);
  });
});

describe('stop signal', () => {
  it('turns the CRI enum into Docker names', () => {
    expect(stopSignalOf('SIGNAL_SIGTERM')).toBe('SIGTERM');
    expect(stopSignalOf('SIGNAL_RUNTIME_DEFAULT')).toBeUndefined();
  });
});
