import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { auditContainerConfig, auditSandboxConfig, dockerMounts } from '../../src/cri/field-audit';
import { containerUser } from '../../src/cri/container-user';
import { criStopSignal, dockerStopSignal } from '../../src/cri/stop-signal';
import { RUNTIME_FEATURES, runtimeHandlers } from '../../src/cri/runtime-features';
import { dockerBinds, dockerContainerSpec, type ContainerConfig } from '../../src/cri/container-config';
import { DomainError, type ErrorKind } from '../../src/errors';
import type { RuntimeReq } from '../../src/server/rpc';

type SandboxConfig = NonNullable<RuntimeReq<'RunPodSandbox'>['config']>;
type Mount = ContainerConfig['mounts'][number];

function mount(extra: Partial<Record<keyof Mount, unknown>>): Mount {
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
  } as Mount;
}

function container(extra: Record<string, unknown> = {}, sec: Record<string, unknown> | null = null): ContainerConfig {
  return {
    metadata: { name: 'app', attempt: 0 },
    image: { image: 'busybox:1' },
    mounts: [],
    devices: [],
    linux: { security_context: sec, resources: null },
    windows: null,
    CDI_devices: [],
    ...extra,
  } as unknown as ContainerConfig;
}

/** The error kind and message a refusal carries. */
function refusal(fn: () => unknown): { kind: ErrorKind; message: string } {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return { kind: err.kind, message: err.message };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('CreateContainer fields Docker cannot honour', () => {
  const api41 = '1.41';

  it.each([
    [
      'uid mappings',
      { mounts: [mount({ uidMappings: [{ host_id: 1000, container_id: 0, length: 1 }] })] },
      'unimplemented',
      /config\.mounts\[0\]\.uidMappings/,
    ],
    [
      'mount options',
      { mounts: [mount({ mount_options: ['noexec'] })] },
      'unimplemented',
      /config\.mounts\[0\]\.mount_options \["noexec"\]/,
    ],
    [
      'recursive read-only on API 1.41',
      { mounts: [mount({ readonly: true, recursive_read_only: true })] },
      'unimplemented',
      /config\.mounts\[0\]\.recursive_read_only: this Docker \(API 1\.41\)/,
    ],
    [
      'recursive read-only without readonly',
      { mounts: [mount({ recursive_read_only: true })] },
      'invalid-argument',
      /recursive_read_only needs readonly/,
    ],
    [
      'image volume on API 1.41',
      { mounts: [mount({ host_path: '', image: { image: 'busybox:1' } })] },
      'unimplemented',
      /config\.mounts\[0\]\.image: this Docker \(API 1\.41\) has no image mounts/,
    ],
    [
      'image_sub_path without image',
      { mounts: [mount({ image_sub_path: 'x' })] },
      'invalid-argument',
      /image_sub_path needs image/,
    ],
    [
      'CDI devices',
      { CDI_devices: [{ name: 'vendor.com/gpu=0' }] },
      'unimplemented',
      /config\.CDI_devices \["vendor\.com\/gpu=0"\]/,
    ],
    ['windows config', { windows: { resources: null, security_context: null } }, 'invalid-argument', /config\.windows/],
  ])('refuses %s', (_what, extra, kind, message) => {
    const r = refusal(() => auditContainerConfig(container(extra), api41));
    expect(r.kind).toBe(kind);
    expect(r.message).toMatch(message);
  });

  it.each([
    [
      'a per-pod user namespace',
      { namespace_options: { userns_options: { mode: 'POD', uids: [], gids: [] } } },
      /userns_options mode POD: user namespaces per pod are not supported/,
    ],
    [
      'the Strict groups policy',
      { supplemental_groups_policy: 'Strict' },
      /supplemental_groups_policy Strict is not supported/,
    ],
    [
      'ambient capabilities',
      { capabilities: { add_capabilities: [], drop_capabilities: [], add_ambient_capabilities: ['NET_BIND_SERVICE'] } },
      /add_ambient_capabilities \["NET_BIND_SERVICE"\]/,
    ],
  ])('refuses %s', (_what, sec, message) => {
    const r = refusal(() => auditContainerConfig(container({}, sec), api41));
    expect(r.kind).toBe('unimplemented');
    expect(r.message).toMatch(message);
  });

  it('accepts what it honours: host user namespace, Merge, plain mounts', () => {
    expect(() =>
      auditContainerConfig(
        container(
          { mounts: [mount({ readonly: true })] },
          {
            namespace_options: { userns_options: { mode: 'NODE', uids: [], gids: [] } },
            supplemental_groups_policy: 'Merge',
          },
        ),
        api41,
      ),
    ).not.toThrow();
  });

  it('gives recursive read-only binds and image volumes to the Mounts API on engines that have them', () => {
    const rro = mount({ readonly: true, recursive_read_only: true, host_path: `${os.tmpdir()}/` });
    const img = mount({ host_path: '', container_path: '/img', image: { image: 'busybox:1' }, image_sub_path: 'etc' });
    const plain = mount({ container_path: '/plain' });
    const cfg = container({ mounts: [rro, img, plain] });
    expect(() => auditContainerConfig(cfg, '1.48')).not.toThrow();
    expect(refusal(() => auditContainerConfig(cfg, '1.44')).message).toMatch(/mounts\[1\]\.image/);
    expect(dockerMounts(cfg.mounts)).toEqual([
      {
        Type: 'bind',
        Source: path.resolve(os.tmpdir()),
        Target: '/data',
        ReadOnly: true,
        BindOptions: { Propagation: 'rprivate', ReadOnlyForceRecursive: true },
      },
      { Type: 'image', Source: 'busybox:1', Target: '/img', ReadOnly: true, ImageOptions: { Subpath: 'etc' } },
    ]);
    // the bind strings keep only what they can express
    expect(
      dockerBinds(cfg.mounts, { config: { rootDirectory: '/var/lib/crishim' } } as Parameters<typeof dockerBinds>[1]),
    ).toEqual([`${os.tmpdir()}:/plain:rw`]);
  });

  it('refuses through the spec builder with the engine API it is given', () => {
    const deps = {
      config: { rootDirectory: '/var/lib/crishim' },
      oomScoreAdjFloor: 0,
      engine: {
        current: () => ({
          reachable: true,
          runtimes: [],
          checkedAt: new Date(),
          apiVersion: '1.41',
          cgroupVersion: '1',
        }),
      },
    } as unknown as Parameters<typeof dockerContainerSpec>[2];
    const r = refusal(() =>
      dockerContainerSpec(
        container({ mounts: [mount({ readonly: true, recursive_read_only: true })] }),
        { id: 'p' },
        deps,
      ),
    );
    expect(r.kind).toBe('unimplemented');
  });
});

describe('RunPodSandbox fields Docker cannot honour', () => {
  const pod = (sec: Record<string, unknown> | null, extra: Record<string, unknown> = {}) =>
    ({
      metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 },
      linux: { security_context: sec },
      windows: null,
      ...extra,
    }) as unknown as SandboxConfig;

  it('refuses per-pod user namespaces, Strict and Windows settings by field name', () => {
    expect(
      refusal(() =>
        auditSandboxConfig(
          pod({
            namespace_options: {
              userns_options: { mode: 'POD', uids: [{ host_id: 100000, container_id: 0, length: 65536 }], gids: [] },
            },
          }),
        ),
      ).message,
    ).toMatch(/^config\.linux\.security_context\.namespace_options\.userns_options mode POD/);
    expect(refusal(() => auditSandboxConfig(pod({ supplemental_groups_policy: 'Strict' }))).kind).toBe('unimplemented');
    expect(
      refusal(() =>
        auditSandboxConfig(
          pod({
            namespace_options: {
              userns_options: { mode: 'NODE', uids: [{ host_id: 1, container_id: 0, length: 1 }], gids: [] },
            },
          }),
        ),
      ).kind,
    ).toBe('invalid-argument');
    expect(refusal(() => auditSandboxConfig(pod(null, { windows: { security_context: null } }))).message).toMatch(
      /config\.windows/,
    );
    expect(() => auditSandboxConfig(pod({ supplemental_groups_policy: 'Merge' }))).not.toThrow();
  });
});

describe('stop signals', () => {
  it('maps the CRI enum onto Docker names, real-time signals included', () => {
    expect(dockerStopSignal('SIGNAL_SIGUSR1')).toBe('SIGUSR1');
    expect(dockerStopSignal('SIGNAL_SIGRTMINPLUS3')).toBe('SIGRTMIN+3');
    expect(dockerStopSignal('SIGNAL_SIGRTMAXMINUS2')).toBe('SIGRTMAX-2');
    expect(dockerStopSignal('SIGNAL_RUNTIME_DEFAULT')).toBeUndefined();
  });

  it('reports Docker StopSignal values as the enum, SIGTERM when Docker has none', () => {
    expect(criStopSignal('SIGUSR1')).toBe('SIGNAL_SIGUSR1');
    expect(criStopSignal('QUIT')).toBe('SIGNAL_SIGQUIT');
    expect(criStopSignal('9')).toBe('SIGNAL_SIGKILL');
    expect(criStopSignal('SIGRTMIN+3')).toBe('SIGNAL_SIGRTMINPLUS3');
    expect(criStopSignal(undefined)).toBe('SIGNAL_SIGTERM');
    expect(criStopSignal('SIGNOPE')).toBe('SIGNAL_RUNTIME_DEFAULT');
  });
});

describe('containerUser', () => {
  let proc: string;
  const id = 'ab'.repeat(32);
  beforeEach(async () => {
    proc = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-proc-'));
    await fsp.mkdir(path.join(proc, '42'));
    await fsp.writeFile(
      path.join(proc, '42', 'status'),
      'Name:\tsh\nUid:\t1000\t1001\t1001\t1001\nGid:\t3000\t3001\t3001\t3001\nGroups:\t4 27 3001 \n',
    );
    await fsp.writeFile(path.join(proc, '42', 'cgroup'), `12:pids:/docker/${id}\n`);
  });
  afterEach(() => fsp.rm(proc, { recursive: true, force: true }));

  it('reports the effective uid and gid and the supplementary groups of the init process', async () => {
    expect(containerUser(42, id, proc)).toEqual({
      linux: { uid: '1001', gid: '3001', supplemental_groups: ['4', '27', '3001'] },
    });
  });

  it('reports nothing for a pid that is not this container (another pid namespace) or is gone', async () => {
    expect(containerUser(42, 'cd'.repeat(32), proc)).toBeUndefined();
    expect(containerUser(43, id, proc)).toBeUndefined();
    expect(containerUser(0, id, proc)).toBeUndefined();
  });
});

describe('Status features', () => {
  const snap = (apiVersion: string) => ({
    reachable: true,
    runtimes: ['runc', 'crun'],
    checkedAt: new Date(),
    apiVersion,
  });

  it('declares recursive read-only mounts only where Docker has them, and never user namespaces', () => {
    expect(runtimeHandlers(snap('1.41'))).toEqual([
      { name: '', features: { recursive_read_only_mounts: false, user_namespaces: false } },
      { name: 'runc', features: { recursive_read_only_mounts: false, user_namespaces: false } },
      { name: 'crun', features: { recursive_read_only_mounts: false, user_namespaces: false } },
    ]);
    expect(runtimeHandlers(snap('1.44'))[0].features).toEqual({
      recursive_read_only_mounts: true,
      user_namespaces: false,
    });
    expect(RUNTIME_FEATURES).toEqual({
      supplemental_groups_policy: false,
      user_namespaces_host_network: false,
      mount_options: false,
    });
  });
});
