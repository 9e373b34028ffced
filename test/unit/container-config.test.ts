import * as fs from 'fs';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  dockerBinds,
  dockerContainerSpec,
  resolveLogPath,
  stopSignalOf,
  type ContainerConfig,
} from '../../src/cri/container-config';
import {
  cgroupVersionOf,
  dockerResources,
  hugepageLimitsOf,
  sharesFromWeight,
} from '../../src/cri/container-resources';
import { containerStatus } from '../../src/rpc/container-status';
import { createImageNames } from '../../src/images/image-names';
import { HUGEPAGE_LIMITS_LABEL } from '../../src/labels';
import { startContainer } from '../../src/rpc/start-container';
import type { LogManager } from '../../src/logs/log-manager';
import { updateContainerResources } from '../../src/rpc/update-container-resources';
import { hugetlbCgroup } from '../../src/cgroups/hugetlb';
import { runningFactsCache } from '../../src/container/running-facts';
import type { ServiceDeps } from '../../src/service-deps';
import { capabilitiesInMask, computeCapabilityGrant } from '../../src/docker/capabilities';
import type { Logger } from '../../src/logging/logger';
import { DomainError } from '../../src/errors';
import type { CallContext } from '../../src/server/rpc';
import { FakeEngine, inspectInfo } from '../support/fake-engine';

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
    if (err instanceof DomainError && err.kind === 'invalid-argument') return err.message;
    throw err;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

describe('bind mounts', () => {
  it('maps readonly, relabel and propagation', () => {
    const tmp = os.tmpdir();
    expect(
      dockerBinds(
        [mount({ readonly: true, selinux_relabel: true, propagation: 'PROPAGATION_HOST_TO_CONTAINER' })],
        deps,
      ),
    ).toEqual([`${tmp}:/data:ro,Z,rslave`]);
    expect(dockerBinds([mount({ propagation: 'PROPAGATION_BIDIRECTIONAL' })], deps)).toEqual([
      `${tmp}:/data:rw,rshared`,
    ]);
  });

  it('refuses missing host paths, relative targets and crishim state', () => {
    expect(invalid(() => dockerBinds([mount({ host_path: '/no/such/dir' })], deps))).toMatch(/does not exist/);
    expect(invalid(() => dockerBinds([mount({ container_path: 'rel' })], deps))).toMatch(/container_path/);
    expect(invalid(() => dockerBinds([mount({ host_path: '/var/lib/crishim/sandbox' })], deps))).toMatch(
      /state directory/,
    );
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
    ({
      cpu_period: '0',
      cpu_quota: '0',
      cpu_shares: '0',
      memory_limit_in_bytes: '0',
      oom_score_adj: '0',
      cpuset_cpus: '',
      cpuset_mems: '',
      hugepage_limits: [],
      unified: {},
      memory_swap_limit_in_bytes: '0',
      ...extra,
    }) as Parameters<typeof dockerResources>[0];

  it('maps CRI resources to Docker, swap following memory', () => {
    expect(
      dockerResources(
        r({
          cpu_shares: '512',
          cpu_quota: '50000',
          cpu_period: '100000',
          memory_limit_in_bytes: '67108864',
          cpuset_cpus: '0',
        }),
        -1000,
      ),
    ).toEqual({
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

describe('resources: cpuset lists', () => {
  const r = (extra: Record<string, string>): Parameters<typeof dockerResources>[0] =>
    ({
      cpu_period: '0',
      cpu_quota: '0',
      cpu_shares: '0',
      memory_limit_in_bytes: '0',
      oom_score_adj: '0',
      cpuset_cpus: '',
      cpuset_mems: '',
      hugepage_limits: [],
      unified: {},
      memory_swap_limit_in_bytes: '0',
      ...extra,
    }) as Parameters<typeof dockerResources>[0];

  it('accepts the kernel list grammar', () => {
    expect(dockerResources(r({ cpuset_cpus: '0-3,5', cpuset_mems: '0' }), 0)).toEqual({
      CpusetCpus: '0-3,5',
      CpusetMems: '0',
    });
  });

  it.each(['0-', 'a', '0,,1', '0 1', '3-1', '0-3\n', '-1', '0;1'])('refuses cpuset_cpus %j', (v) => {
    expect(invalid(() => dockerResources(r({ cpuset_cpus: v }), 0))).toMatch(/resources\.cpuset_cpus/);
  });

  it('refuses bad cpuset_mems naming it', () => {
    expect(invalid(() => dockerResources(r({ cpuset_mems: '0\u0000' }), 0))).toMatch(/resources\.cpuset_mems/);
  });
});

describe('stop signal', () => {
  it('turns the CRI enum into Docker names', () => {
    expect(stopSignalOf('SIGNAL_SIGTERM')).toBe('SIGTERM');
    expect(stopSignalOf('SIGNAL_RUNTIME_DEFAULT')).toBeUndefined();
  });
});

const baseResources = {
  cpu_period: '0',
  cpu_quota: '0',
  cpu_shares: '0',
  memory_limit_in_bytes: '0',
  oom_score_adj: '0',
  cpuset_cpus: '',
  cpuset_mems: '',
  hugepage_limits: [],
  unified: {},
  memory_swap_limit_in_bytes: '0',
};
type Res = Parameters<typeof dockerResources>[0];
const res = (extra: Record<string, unknown>): NonNullable<Res> => ({ ...baseResources, ...extra }) as NonNullable<Res>;
const unified = (u: Record<string, string>, v: 1 | 2 = 2) => dockerResources(res({ unified: u }), 0, v);

describe('resources.unified', () => {
  it('maps the keys Docker has fields for on cgroup v2', () => {
    expect(unified({ 'memory.max': '67108864' })).toEqual({ Memory: 67108864, MemorySwap: 67108864 });
    expect(unified({ 'cpu.max': '50000 100000' })).toEqual({ CpuQuota: 50000, CpuPeriod: 100000 });
    expect(unified({ 'cpu.max': 'max 200000' })).toEqual({ CpuQuota: -1, CpuPeriod: 200000 });
    expect(unified({ 'cpu.max': '25000' })).toEqual({ CpuQuota: 25000 });
    expect(unified({ 'pids.max': '64' })).toEqual({ PidsLimit: 64 });
    expect(unified({ 'pids.max': 'max' })).toEqual({ PidsLimit: -1 });
    expect(unified({ 'cpuset.cpus': '0-1', 'cpuset.mems': '0' })).toEqual({ CpusetCpus: '0-1', CpusetMems: '0' });
    expect(unified({ 'memory.max': 'max' })).toEqual({});
  });

  it('converts cpu.weight to shares so that runc converts them back to the same weight', () => {
    // runc: weight = 1 + ((shares - 2) * 9999) / 262142
    const runcWeight = (shares: number): number => 1 + Math.floor(((shares - 2) * 9999) / 262142);
    for (const w of [1, 2, 39, 79, 100, 5000, 9999, 10000]) expect(runcWeight(sharesFromWeight(w))).toBe(w);
    expect(sharesFromWeight(1)).toBe(2);
    expect(sharesFromWeight(10000)).toBe(262144);
    expect(unified({ 'cpu.weight': '100' })).toEqual({ CpuShares: sharesFromWeight(100) });
  });

  it('wins over the typed fields, as runc applies it last, and keeps swap with memory', () => {
    const out = dockerResources(
      res({
        memory_limit_in_bytes: '1000000000',
        cpu_shares: '512',
        unified: { 'memory.max': '500000000', 'cpu.weight': '10000' },
      }),
      0,
      2,
    );
    expect(out).toEqual({ Memory: 500000000, MemorySwap: 500000000, CpuShares: 262144 });
  });

  it('refuses keys Docker cannot set, naming the key', () => {
    expect(invalid(() => unified({ 'io.max': '8:0 rbps=1' }))).toMatch(
      /resources\.unified\["io\.max"\] is not supported/,
    );
    expect(invalid(() => unified({ 'memory.high': '1' }))).toMatch(/memory\.high/);
  });

  it.each([
    ['cpu.max', '500 100000'],
    ['cpu.max', '50000 10'],
    ['cpu.max', '1 2 3'],
    ['cpu.max', ''],
    ['memory.max', '-1'],
    ['memory.max', '1e9'],
    ['pids.max', '0'],
    ['cpu.weight', '0'],
    ['cpu.weight', '10001'],
    ['cpuset.cpus', '0-'],
  ])('refuses %s=%j naming the key', (key, value) => {
    expect(invalid(() => unified({ [key]: value }))).toContain(`resources.unified[${JSON.stringify(key)}]`);
  });

  it('is refused whole on cgroup v1, as runc does', () => {
    expect(invalid(() => unified({ 'memory.max': '1' }, 1))).toMatch(/resources\.unified needs cgroup v2/);
    expect(dockerResources(res({ unified: {} }), 0, 1)).toEqual({});
  });

  it('takes the cgroup version from Docker, else from the local mount', () => {
    const engine = (v?: string) => ({
      current: () => ({ reachable: true, runtimes: [], checkedAt: new Date(), cgroupVersion: v }),
    });
    expect(cgroupVersionOf(engine('2'))).toBe(2);
    expect(cgroupVersionOf(engine('1'))).toBe(1);
    const local = fs.existsSync('/sys/fs/cgroup/cgroup.controllers') ? 2 : 1;
    expect(cgroupVersionOf(engine(undefined))).toBe(local);
    expect(cgroupVersionOf(undefined)).toBe(local);
  });
});

describe('resources.hugepage_limits', () => {
  const hp = (limits: Array<{ page_size: string; limit: string }>) =>
    dockerResources(res({ hugepage_limits: limits }), 0, 1);

  it('adds no Docker field (they are written to the cgroup after start)', () => {
    expect(
      hp([
        { page_size: '2MB', limit: '0' },
        { page_size: '1GB', limit: '2147483648' },
      ]),
    ).toEqual({});
  });

  it.each([
    [[{ page_size: '2M', limit: '0' }], /hugepage_limits\[0\]\.page_size/],
    [[{ page_size: '', limit: '0' }], /hugepage_limits\[0\]\.page_size/],
    [[{ page_size: '2MB/../x', limit: '0' }], /hugepage_limits\[0\]\.page_size/],
    [[{ page_size: '0MB', limit: '0' }], /hugepage_limits\[0\]\.page_size/],
    [[{ page_size: '2MB', limit: '-1' }], /hugepage_limits\[0\]\.limit .* non-negative/],
    [[{ page_size: '2MB', limit: '18446744073709551616' }], /hugepage_limits\[0\]\.limit/],
    [
      [
        { page_size: '2MB', limit: '0' },
        { page_size: '2MB', limit: '1' },
      ],
      /hugepage_limits\[1\]\.page_size 2MB is listed twice/,
    ],
  ])('refuses %j', (limits, msg) => {
    expect(invalid(() => hp(limits))).toMatch(msg);
  });
});

/** A container config with only what the spec builder reads. */
function cconfig(
  extra: Record<string, unknown> = {},
  sec: Record<string, unknown> | null = null,
  resources: Record<string, unknown> | null = null,
): ContainerConfig {
  return {
    metadata: { name: 'app', attempt: 0 },
    image: { image: 'busybox:1' },
    command: [],
    args: [],
    working_dir: '',
    envs: [],
    mounts: [],
    devices: [],
    labels: {},
    annotations: {},
    log_path: '',
    stdin: false,
    stdin_once: false,
    tty: false,
    linux: { security_context: sec, resources: resources ? res(resources) : null },
    windows: null,
    CDI_devices: [],
    stop_signal: 'SIGNAL_RUNTIME_DEFAULT',
    ...extra,
  } as unknown as ContainerConfig;
}
const SB = 'cd'.repeat(32);
const specDeps = { config: { rootDirectory: '/var/lib/crishim' }, oomScoreAdjFloor: 0 } as Parameters<
  typeof dockerContainerSpec
>[2];
const spec = (config: ContainerConfig, sandbox: Parameters<typeof dockerContainerSpec>[1] = { id: SB }) =>
  dockerContainerSpec(config, sandbox, specDeps);
const hc = (config: ContainerConfig) => spec(config).HostConfig!;

describe('container Docker spec', () => {
  it('joins the pause container network and IPC, with bounded json-file logs and no restart', () => {
    expect(hc(cconfig())).toMatchObject({
      NetworkMode: `container:${SB}`,
      IpcMode: `container:${SB}`,
      PidMode: `container:${SB}`,
      Privileged: false,
      ReadonlyRootfs: false,
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '5', compress: 'false' } },
      RestartPolicy: { Name: 'no' },
    });
    const h = hc(cconfig());
    for (const k of [
      'CapAdd',
      'CapDrop',
      'GroupAdd',
      'MaskedPaths',
      'ReadonlyPaths',
      'CgroupParent',
      'Runtime',
    ] as const)
      expect(h[k]).toBeUndefined();
  });

  it.each([
    ['POD', `container:${SB}`],
    ['CONTAINER', ''],
    ['NODE', 'host'],
  ])('pid namespace %s -> PidMode %j', (pid, mode) => {
    expect(hc(cconfig({}, { namespace_options: { pid, network: 'POD', ipc: 'POD', target_id: '' } })).PidMode).toBe(
      mode,
    );
  });

  it('pid namespace TARGET joins the target container and needs its id', () => {
    const target = 'ef'.repeat(32);
    expect(hc(cconfig({}, { namespace_options: { pid: 'TARGET', target_id: target } })).PidMode).toBe(
      `container:${target}`,
    );
    expect(invalid(() => hc(cconfig({}, { namespace_options: { pid: 'TARGET', target_id: '' } })))).toMatch(
      /target_id/,
    );
  });

  it('maps devices with rwm as the default permissions', () => {
    const devices = [
      { container_path: '/dev/fuse', host_path: '/dev/fuse', permissions: 'rw' },
      { container_path: '/dev/xnull', host_path: '/dev/null', permissions: '' },
    ];
    expect(hc(cconfig({ devices })).Devices).toEqual([
      { PathOnHost: '/dev/fuse', PathInContainer: '/dev/fuse', CgroupPermissions: 'rw' },
      { PathOnHost: '/dev/null', PathInContainer: '/dev/xnull', CgroupPermissions: 'rwm' },
    ]);
  });

  it('passes capabilities, no_new_privs and a read-only rootfs', () => {
    const h = hc(
      cconfig(
        {},
        {
          readonly_rootfs: true,
          no_new_privs: true,
          capabilities: { add_capabilities: ['NET_ADMIN', 'SYS_TIME'], drop_capabilities: ['MKNOD'] },
        },
      ),
    );
    expect(h.Privileged).toBe(false);
    expect(h.ReadonlyRootfs).toBe(true);
    expect(h.CapAdd).toEqual(['CAP_NET_ADMIN', 'CAP_SYS_TIME']);
    expect(h.CapDrop).toEqual(['CAP_MKNOD']);
    expect(h.SecurityOpt).toContain('no-new-privileges');
    expect(hc(cconfig({}, { no_new_privs: false })).SecurityOpt).not.toContain('no-new-privileges');
  });

  it("privileged uses Docker's Privileged where dockerd can grant every capability", () => {
    const deps = {
      ...specDeps,
      capabilities: computeCapabilityGrant('1.41', capabilitiesInMask('000001ffffffffff'), 'test'),
    };
    const h = dockerContainerSpec(
      cconfig(
        {},
        {
          privileged: true,
          masked_paths: ['/proc/kcore'],
          capabilities: { add_capabilities: ['NET_ADMIN'] },
          seccomp: { profile_type: 'RuntimeDefault', localhost_ref: '' },
        },
      ),
      { id: SB },
      deps,
    ).HostConfig!;
    expect(h.Privileged).toBe(true);
    expect(h.CapAdd).toBeUndefined();
    expect(h.MaskedPaths).toBeUndefined();
    expect(h.SecurityOpt).toEqual([]);
  });

  it('privileged grants the equivalent fields where dockerd lacks a capability', () => {
    const deps = {
      ...specDeps,
      capabilities: computeCapabilityGrant('1.41', capabilitiesInMask('000001fffeffffff'), 'test'),
    };
    const devices = [
      { container_path: '/dev/xnull', host_path: '/dev/null', permissions: 'r' },
      { container_path: '/dev/zero', host_path: '/dev/null', permissions: 'r' },
    ];
    const h = dockerContainerSpec(
      cconfig(
        { devices },
        {
          privileged: true,
          masked_paths: ['/proc/kcore'],
          readonly_paths: ['/proc/sys'],
          seccomp: { profile_type: 'Localhost', localhost_ref: '/no/such/profile.json' },
        },
      ),
      { id: SB },
      deps,
    ).HostConfig!;
    expect(h.Privileged).toBe(false);
    expect(h.CapAdd).toContain('CAP_SYS_ADMIN');
    expect(h.CapAdd).not.toContain('CAP_SYS_RESOURCE');
    expect(h.DeviceCgroupRules).toEqual(['a *:* rwm']);
    // the requested device first, then the host's own /dev
    expect(h.Devices![0]).toEqual({ PathOnHost: '/dev/null', PathInContainer: '/dev/xnull', CgroupPermissions: 'r' });
    expect(h.Devices!.map((d: { PathOnHost: string }) => d.PathOnHost)).toContain('/dev/null');
    expect(h.Devices!.some((d: { PathOnHost: string }) => d.PathOnHost.startsWith('/dev/pts/'))).toBe(false);
    // the host's /dev/zero does not shadow the requested mapping at that path
    expect(h.Devices!.filter((d: { PathInContainer: string }) => d.PathInContainer === '/dev/zero')).toEqual([
      { PathOnHost: '/dev/null', PathInContainer: '/dev/zero', CgroupPermissions: 'r' },
    ]);
    // the profile is ignored (never read) and so are the masked paths
    expect(h.SecurityOpt).toEqual(['seccomp=unconfined', 'apparmor=unconfined']);
    // empty lists, not absent ones: Docker applies its defaults when they are absent
    expect(h.MaskedPaths).toEqual([]);
    expect(h.ReadonlyPaths).toEqual([]);
  });

  it('passes masked and read-only paths', () => {
    const h = hc(cconfig({}, { masked_paths: ['/proc/kcore', '/proc/keys'], readonly_paths: ['/proc/sys'] }));
    expect(h.MaskedPaths).toEqual(['/proc/kcore', '/proc/keys']);
    expect(h.ReadonlyPaths).toEqual(['/proc/sys']);
  });

  it('builds User from run_as_user / run_as_username and run_as_group', () => {
    expect(spec(cconfig({}, { run_as_user: { value: '1000' } })).User).toBe('1000');
    expect(spec(cconfig({}, { run_as_user: { value: '1000' }, run_as_group: { value: '3000' } })).User).toBe(
      '1000:3000',
    );
    expect(spec(cconfig({}, { run_as_username: 'nobody', run_as_group: { value: '65534' } })).User).toBe(
      'nobody:65534',
    );
    expect(spec(cconfig({}, { run_as_username: 'www', run_as_user: { value: '5' } })).User).toBe('www');
    expect(spec(cconfig({}, { run_as_user: { value: '0' } })).User).toBe('0');
    expect(spec(cconfig()).User).toBeUndefined();
    expect(invalid(() => spec(cconfig({}, { run_as_group: { value: '3000' } })))).toMatch(/run_as_group/);
  });

  it('adds supplemental groups as strings', () => {
    expect(hc(cconfig({}, { supplemental_groups: ['4', '27'] })).GroupAdd).toEqual(['4', '27']);
  });

  it('passes tty, stdin and stdin_once, attaching stderr only without a tty', () => {
    expect(spec(cconfig({ tty: true, stdin: true, stdin_once: true }))).toMatchObject({
      Tty: true,
      OpenStdin: true,
      StdinOnce: true,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: false,
    });
    expect(spec(cconfig())).toMatchObject({
      Tty: false,
      OpenStdin: false,
      StdinOnce: false,
      AttachStdin: false,
      AttachStderr: true,
    });
  });

  it('passes command, args, env, working dir, stop signal, cgroup parent and runtime', () => {
    const s = spec(
      cconfig({
        command: ['sh'],
        args: ['-c', 'true'],
        working_dir: '/w',
        envs: [{ key: 'A', value: '1' }],
        stop_signal: 'SIGNAL_SIGINT',
      }),
      { id: SB, cgroupParent: '/kubepods/pod1', runtime: 'runsc' },
    );
    expect(s).toMatchObject({
      Image: 'busybox:1',
      Entrypoint: ['sh'],
      Cmd: ['-c', 'true'],
      WorkingDir: '/w',
      Env: ['A=1'],
      StopSignal: 'SIGINT',
    });
    expect(s.HostConfig).toMatchObject({ CgroupParent: '/kubepods/pod1', Runtime: 'runsc' });
  });

  it('records hugepage limits in a label for StartContainer, and nothing without them', () => {
    const s = spec(
      cconfig({}, null, {
        hugepage_limits: [
          { page_size: '2MB', limit: '4194304' },
          { page_size: '1GB', limit: '0' },
        ],
      }),
    );
    expect(JSON.parse(s.Labels![HUGEPAGE_LIMITS_LABEL])).toEqual([
      { page_size: '2MB', limit: '4194304' },
      { page_size: '1GB', limit: '0' },
    ]);
    expect(hugepageLimitsOf(s.Labels)).toEqual([
      { page_size: '2MB', limit: '4194304' },
      { page_size: '1GB', limit: '0' },
    ]);
    expect(spec(cconfig({}, null, {})).Labels).toBeUndefined();
    expect(hugepageLimitsOf({ [HUGEPAGE_LIMITS_LABEL]: 'not json' })).toEqual([]);
  });

  it('refuses unified on cgroup v1 at create, asking Docker for the version', () => {
    const deps = {
      ...specDeps,
      engine: { current: () => ({ reachable: true, runtimes: [], checkedAt: new Date(), cgroupVersion: '1' }) },
    } as unknown as Parameters<typeof dockerContainerSpec>[2];
    expect(
      invalid(() => dockerContainerSpec(cconfig({}, null, { unified: { 'pids.max': '10' } }), { id: SB }, deps)),
    ).toMatch(/needs cgroup v2/);
    const v2 = {
      ...deps,
      engine: { current: () => ({ reachable: true, runtimes: [], checkedAt: new Date(), cgroupVersion: '2' }) },
    } as unknown as Parameters<typeof dockerContainerSpec>[2];
    expect(
      dockerContainerSpec(cconfig({}, null, { unified: { 'pids.max': '10' } }), { id: SB }, v2).HostConfig?.PidsLimit,
    ).toBe(10);
  });
});

/** A logger that records warnings (the rest is discarded). */
function recordingLog(): { log: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const log = {
    warn: (m: string) => void warnings.push(m),
    info: () => undefined,
    debug: () => undefined,
    error: () => undefined,
    child: () => log,
  };
  return { log: log as unknown as Logger, warnings };
}

const CID = 'ab'.repeat(32);

/** Fake cgroup/proc trees made by the tests, removed at the end. */
const fakeBases: string[] = [];
afterAll(async () => {
  for (const b of fakeBases) await fsp.rm(b, { recursive: true, force: true });
});

interface FakeHost {
  root: string;
  proc: string;
  /** The container's hugetlb directory (where the limit files are). */
  dir: string;
}

/** A cgroup v1 tree with a hugetlb hierarchy (or without one) and /proc/<pid>/cgroup for `pid`. */
async function fakeV1(pid: number, withHugetlb: boolean): Promise<FakeHost> {
  const base = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cg1-'));
  fakeBases.push(base);
  const root = path.join(base, 'cgroup');
  const proc = path.join(base, 'proc');
  const cgPath = `/docker/${CID}`;
  await fsp.mkdir(path.join(root, 'memory', cgPath), { recursive: true });
  const dir = path.join(root, 'hugetlb', cgPath);
  const lines = [`4:memory:${cgPath}`, `2:cpu,cpuacct:${cgPath}`, '0::/'];
  if (withHugetlb) {
    await fsp.mkdir(dir, { recursive: true });
    for (const f of ['hugetlb.2MB.limit_in_bytes', 'hugetlb.1GB.limit_in_bytes', 'hugetlb.2MB.rsvd.limit_in_bytes'])
      await fsp.writeFile(path.join(dir, f), '9223372036854771712\n');
    lines.unshift(`12:hugetlb:${cgPath}`);
  }
  await fsp.mkdir(path.join(proc, String(pid)), { recursive: true });
  await fsp.writeFile(path.join(proc, String(pid), 'cgroup'), lines.join('\n') + '\n');
  return { root, proc, dir };
}

/** A cgroup v2 tree whose container cgroup has (or lacks) the hugetlb controller. */
async function fakeV2(pid: number, withHugetlb: boolean): Promise<FakeHost> {
  const base = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cg2-'));
  fakeBases.push(base);
  const root = path.join(base, 'cgroup');
  const proc = path.join(base, 'proc');
  const cgPath = `/system.slice/docker-${CID}.scope`;
  const dir = path.join(root, cgPath);
  await fsp.mkdir(dir, { recursive: true });
  await fsp.writeFile(
    path.join(root, 'cgroup.controllers'),
    'cpuset cpu io memory pids' + (withHugetlb ? ' hugetlb' : '') + '\n',
  );
  await fsp.writeFile(
    path.join(dir, 'cgroup.controllers'),
    'cpuset cpu io memory pids' + (withHugetlb ? ' hugetlb' : '') + '\n',
  );
  if (withHugetlb)
    for (const f of ['hugetlb.2MB.max', 'hugetlb.1GB.max', 'hugetlb.2MB.rsvd.max'])
      await fsp.writeFile(path.join(dir, f), 'max\n');
  await fsp.mkdir(path.join(proc, String(pid)), { recursive: true });
  await fsp.writeFile(path.join(proc, String(pid), 'cgroup'), `0::${cgPath}\n`);
  return { root, proc, dir };
}

const LIMITS = [
  { page_size: '2MB', limit: '4194304' },
  { page_size: '1GB', limit: '0' },
];

describe('hugetlb cgroup limits', () => {
  it('writes limit_in_bytes on cgroup v1 and reads them back (reservation files aside)', async () => {
    const h = await fakeV1(101, true);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    expect(await cg.apply(101, CID, LIMITS, recordingLog().log)).toEqual(LIMITS);
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.2MB.limit_in_bytes'), 'utf8')).toBe('4194304');
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.1GB.limit_in_bytes'), 'utf8')).toBe('0');
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.2MB.rsvd.limit_in_bytes'), 'utf8')).toBe(
      '9223372036854771712\n',
    );
    expect(await cg.read(101, CID)).toEqual([
      { page_size: '1GB', limit: '0' },
      { page_size: '2MB', limit: '4194304' },
    ]);
  });

  it('writes <size>.max on cgroup v2, and reports "max" as unlimited', async () => {
    const h = await fakeV2(102, true);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    expect(await cg.read(102, CID)).toEqual([
      { page_size: '1GB', limit: '18446744073709551615' },
      { page_size: '2MB', limit: '18446744073709551615' },
    ]);
    await cg.apply(102, CID, [{ page_size: '2MB', limit: '2097152' }], recordingLog().log);
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.2MB.max'), 'utf8')).toBe('2097152');
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.1GB.max'), 'utf8')).toBe('max\n');
  });

  it.each([
    ['v1', fakeV1],
    ['v2', fakeV2],
  ])('without a hugetlb controller (%s) warns once per instance and goes on', async (_v, fake) => {
    const h = await fake(103, false);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    const rec = recordingLog();
    expect(await cg.apply(103, CID, LIMITS, rec.log)).toEqual([]);
    expect(await cg.apply(103, CID, LIMITS, rec.log)).toEqual([]);
    expect(rec.warnings).toHaveLength(1);
    expect(rec.warnings[0]).toMatch(/no hugetlb cgroup controller/);
    expect(await cg.read(103, CID)).toEqual([]);
    // nothing was created where a controller would be
    await expect(fsp.readdir(path.join(h.root, 'hugetlb'))).rejects.toThrow();
  });

  it('refuses a page size the host does not have', async () => {
    const h = await fakeV1(104, true);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    await expect(cg.apply(104, CID, [{ page_size: '16GB', limit: '0' }], recordingLog().log)).rejects.toMatchObject({
      kind: 'invalid-argument',
      message: expect.stringMatching(/16GB is not supported/),
    });
  });

  it('does nothing for a process that is gone', async () => {
    const h = await fakeV1(105, true);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    expect(await cg.apply(99999, CID, LIMITS, recordingLog().log)).toEqual([]);
    expect(await cg.read(99999, CID)).toEqual([]);
  });

  it("never writes into the cgroup of a process that is not the container's (e.g. a remote Docker's pid)", async () => {
    const h = await fakeV1(106, true);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    const rec = recordingLog();
    expect(await cg.apply(106, 'ef'.repeat(32), LIMITS, rec.log)).toEqual([]);
    expect(rec.warnings[0]).toMatch(/cgroup of the container not found/);
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.2MB.limit_in_bytes'), 'utf8')).toBe('9223372036854771712\n');
    expect(await cg.read(106, 'ef'.repeat(32))).toEqual([]);
  });
});

const ctxOf = (log: Logger): CallContext => ({
  signal: new AbortController().signal,
  method: 'X',
  log,
  annotate: () => undefined,
});

/** The shared fake with one CRI container (created; start gives it `pid`); `calls` lists what changed it. */
function fakeDocker(pid: number, labels: Record<string, string>, version: '1' | '2' = '1') {
  const docker = new FakeEngine();
  docker.startPid = pid;
  docker.addContainer(
    inspectInfo({
      Id: CID,
      Name: '/k8s_app_pod_ns_uid_0',
      Created: '2026-01-01T00:00:00Z',
      Image: 'sha256:1',
      Config: { Labels: { 'io.kubernetes.docker.type': 'container', ...labels }, Image: 'busybox', Tty: false },
    }),
  );
  const changing: Record<string, (args: unknown[]) => string> = {
    startContainer: () => 'start',
    killContainer: () => 'kill',
    updateContainer: (args) => `update ${JSON.stringify(args[1])}`,
  };
  const calls = (): string[] => docker.calls.flatMap((c) => (changing[c.call] ? [changing[c.call](c.args)] : []));
  // only what these RPCs read: the rest of ServiceDeps is never touched
  const deps = {
    docker,
    oomScoreAdjFloor: 0,
    engine: { current: () => ({ reachable: true, runtimes: [], checkedAt: new Date(), cgroupVersion: version }) },
  } as unknown as ServiceDeps;
  return {
    deps,
    get calls(): string[] {
      return calls();
    },
    start: () => docker.startContainer(CID),
  };
}
const noLogs = { follow: () => undefined } as unknown as LogManager;

describe('hugepage limits through the RPCs', () => {
  it('StartContainer writes the limits recorded at create; ContainerStatus reports what the cgroup has', async () => {
    const h = await fakeV1(201, true);
    const facts = runningFactsCache(hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc }));
    const f = fakeDocker(201, { [HUGEPAGE_LIMITS_LABEL]: JSON.stringify(LIMITS) });
    const rec = recordingLog();
    await startContainer(f.deps, noLogs, facts.hugetlb)({ container_id: CID }, ctxOf(rec.log));
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.2MB.limit_in_bytes'), 'utf8')).toBe('4194304');
    const st = await containerStatus(
      f.deps,
      facts,
      createImageNames(f.deps.docker),
    )({ container_id: CID, verbose: false }, ctxOf(rec.log));
    expect(st.status?.resources?.linux?.hugepage_limits).toEqual([
      { page_size: '1GB', limit: '0' },
      { page_size: '2MB', limit: '4194304' },
    ]);
    // the bookkeeping label is not a CRI label
    expect(st.status?.labels).toEqual({});
  });

  it('StartContainer kills the container when a limit cannot be written', async () => {
    const h = await fakeV1(202, true);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    const f = fakeDocker(202, { [HUGEPAGE_LIMITS_LABEL]: JSON.stringify([{ page_size: '16GB', limit: '0' }]) });
    await expect(
      startContainer(f.deps, noLogs, cg)({ container_id: CID }, ctxOf(recordingLog().log)),
    ).rejects.toMatchObject({ kind: 'invalid-argument' });
    expect(f.calls).toEqual(['start', 'kill']);
  });

  it('StartContainer goes on without a hugetlb controller; status reports none', async () => {
    const h = await fakeV1(203, false);
    const facts = runningFactsCache(hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc }));
    const f = fakeDocker(203, { [HUGEPAGE_LIMITS_LABEL]: JSON.stringify(LIMITS) });
    const rec = recordingLog();
    await startContainer(f.deps, noLogs, facts.hugetlb)({ container_id: CID }, ctxOf(rec.log));
    expect(f.calls).toEqual(['start']);
    expect(rec.warnings).toHaveLength(1);
    const st = await containerStatus(
      f.deps,
      facts,
      createImageNames(f.deps.docker),
    )({ container_id: CID, verbose: false }, ctxOf(rec.log));
    expect(st.status?.resources?.linux?.hugepage_limits).toEqual([]);
  });

  it('UpdateContainerResources writes hugepage limits of a running container (v2) next to the Docker update', async () => {
    const h = await fakeV2(204, true);
    const cg = hugetlbCgroup({ cgroupRoot: h.root, proc: h.proc });
    const f = fakeDocker(204, {}, '2');
    await f.start();
    await updateContainerResources(f.deps, cg)(
      {
        container_id: CID,
        linux: res({ hugepage_limits: [{ page_size: '1GB', limit: '1073741824' }], unified: { 'pids.max': '50' } }),
        windows: null,
        annotations: {},
      },
      ctxOf(recordingLog().log),
    );
    expect(await fsp.readFile(path.join(h.dir, 'hugetlb.1GB.max'), 'utf8')).toBe('1073741824');
    expect(f.calls).toEqual(['start', 'update {"PidsLimit":50}']);
  });

  it('UpdateContainerResources refuses unified on cgroup v1 before touching Docker', async () => {
    const f = fakeDocker(205, {}, '1');
    const update = updateContainerResources(
      f.deps,
      hugetlbCgroup({ cgroupRoot: '/nonexistent', proc: '/nonexistent' }),
    );
    await expect(
      update(
        { container_id: CID, linux: res({ unified: { 'memory.max': '1000000' } }), windows: null, annotations: {} },
        ctxOf(recordingLog().log),
      ),
    ).rejects.toMatchObject({
      kind: 'invalid-argument',
      message: expect.stringMatching(/resources\.unified needs cgroup v2/),
    });
    expect(f.calls).toEqual([]);
  });
});
