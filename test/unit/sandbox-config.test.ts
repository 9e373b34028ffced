import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import winston from 'winston';
import type * as Docker from '../../src/docker/types';
import type { ServiceDeps } from '../../src/service-deps';
import { runPodSandbox } from '../../src/rpc/run-pod-sandbox';
import {
  hostConfigFor,
  pauseContainerSpec,
  writeResolvConf,
  type SandboxConfig,
} from '../../src/sandbox/pause-container';
import { cniPortMappings, portMappingsOf } from '../../src/sandbox/port-mappings';
import type { PodNetworkRequest } from '../../src/network/types';
import type { CallContext } from '../../src/server/rpc';
import { FakeEngine } from '../support/fake-engine';

const log = winston.createLogger({ silent: true });
const ctx: CallContext = {
  signal: new AbortController().signal,
  method: 'RunPodSandbox',
  log,
  annotate: () => undefined,
};
const deps = { sandboxOomScoreAdj: -998 };

/** A pod config with the given linux section (and extra top-level fields). */
function pod(linux: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): SandboxConfig {
  return {
    metadata: { name: 'web', namespace: 'default', uid: 'u-1', attempt: 0 },
    hostname: 'web-host',
    log_directory: '',
    dns_config: null,
    port_mappings: [],
    labels: {},
    annotations: {},
    linux: { cgroup_parent: '', sysctls: {}, security_context: null, ...linux },
    windows: null,
    ...extra,
  } as unknown as SandboxConfig;
}

const sec = (s: Record<string, unknown>): Record<string, unknown> => ({ security_context: s });

describe('pause container HostConfig', () => {
  it('uses its own shareable IPC, no Docker network, and the sandbox oom_score_adj by default', () => {
    const hc = hostConfigFor(deps, pod(), undefined);
    expect(hc).toMatchObject({
      NetworkMode: 'none',
      IpcMode: 'shareable',
      PidMode: '',
      OomScoreAdj: -998,
      ReadonlyRootfs: false,
    });
    expect(hc.UTSMode).toBeUndefined();
    expect(hc.CgroupParent).toBeUndefined();
    expect(hc.Sysctls).toBeUndefined();
    expect(hc.Runtime).toBeUndefined();
    expect(hc.Privileged).toBeUndefined();
  });

  it('passes sysctls, cgroup parent, runtime and supplemental groups', () => {
    const hc = hostConfigFor(
      deps,
      pod({
        sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0', 'kernel.shm_rmid_forced': '1' },
        cgroup_parent: '/kubepods/pod-u-1',
        ...sec({ supplemental_groups: ['5', '6'] }),
      }),
      'runc-alt',
    );
    expect(hc.Sysctls).toEqual({ 'net.ipv4.ip_unprivileged_port_start': '0', 'kernel.shm_rmid_forced': '1' });
    expect(hc.CgroupParent).toBe('/kubepods/pod-u-1');
    expect(hc.Runtime).toBe('runc-alt');
    expect(hc.GroupAdd).toEqual(['5', '6']);
  });

  it("labels the pause container with the pod's SELinux options", () => {
    const hc = hostConfigFor(
      deps,
      pod(sec({ selinux_options: { user: 'system_u', role: 'system_r', type: 'spc_t', level: 's0' } })),
      undefined,
    );
    expect(hc.SecurityOpt).toEqual(
      expect.arrayContaining(['label=user:system_u', 'label=role:system_r', 'label=type:spc_t', 'label=level:s0']),
    );
  });

  it('makes the rootfs read-only on request', () => {
    expect(hostConfigFor(deps, pod(sec({ readonly_rootfs: true })), undefined).ReadonlyRootfs).toBe(true);
  });

  it('maps NODE namespaces to the host ones', () => {
    const hc = hostConfigFor(
      deps,
      pod(sec({ namespace_options: { network: 'NODE', pid: 'NODE', ipc: 'NODE' } })),
      undefined,
    );
    expect(hc).toMatchObject({ NetworkMode: 'host', UTSMode: 'host', PidMode: 'host', IpcMode: 'host' });
    const podNs = hostConfigFor(
      deps,
      pod(sec({ namespace_options: { network: 'POD', pid: 'POD', ipc: 'POD' } })),
      undefined,
    );
    expect(podNs).toMatchObject({ NetworkMode: 'none', PidMode: '', IpcMode: 'shareable' });
  });

  it('does not make the pause container privileged even for a privileged pod', () => {
    expect(hostConfigFor(deps, pod(sec({ privileged: true })), undefined).Privileged).toBeUndefined();
  });

  it('leaves port mappings to CNI: no Docker port bindings, host ports handed to portmap', () => {
    const config = pod(
      {},
      {
        port_mappings: [
          { protocol: 'TCP', container_port: 80, host_port: 8080, host_ip: '127.0.0.1' },
          { protocol: 'UDP', container_port: 53, host_port: 0, host_ip: '' },
          { protocol: 'SCTP', container_port: 9, host_port: 9009, host_ip: '' },
        ],
      },
    );
    const spec = pauseContainerSpec(deps, config, 'pause:1', {}, undefined);
    expect(spec.HostConfig?.PortBindings).toBeUndefined();
    expect(spec.ExposedPorts).toBeUndefined();
    expect(cniPortMappings(portMappingsOf(config))).toEqual([
      { hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '127.0.0.1' },
      { hostPort: 9009, containerPort: 9, protocol: 'sctp', hostIP: undefined },
    ]);
  });
});

describe('pause container create options', () => {
  it('runs as run_as_user[:run_as_group] with the pod hostname', () => {
    const spec = pauseContainerSpec(
      deps,
      pod(sec({ run_as_user: { value: '1000' }, run_as_group: { value: '3000' } })),
      'pause:1',
      { a: 'b' },
      undefined,
    );
    expect(spec).toMatchObject({ Image: 'pause:1', Labels: { a: 'b' }, User: '1000:3000', Hostname: 'web-host' });
    expect(pauseContainerSpec(deps, pod(sec({ run_as_user: { value: '0' } })), 'p', {}, undefined).User).toBe('0');
    expect(pauseContainerSpec(deps, pod(), 'p', {}, undefined).User).toBeUndefined();
  });

  it('keeps the node hostname for host-network pods', () => {
    const spec = pauseContainerSpec(deps, pod(sec({ namespace_options: { network: 'NODE' } })), 'p', {}, undefined);
    expect(spec.Hostname).toBeUndefined();
  });
});

describe('resolv.conf', () => {
  it('writes servers, searches and options as dockershim did', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-dns-'));
    const file = path.join(dir, 'resolv.conf');
    await writeResolvConf(file, {
      servers: ['10.96.0.10', '1.1.1.1'],
      searches: ['ns.svc.cluster.local', 'cluster.local'],
      options: ['ndots:5'],
    });
    expect(await fsp.readFile(file, 'utf8')).toBe(
      'nameserver 10.96.0.10\nnameserver 1.1.1.1\nsearch ns.svc.cluster.local cluster.local\noptions ndots:5\n',
    );
    await fsp.rm(dir, { recursive: true });
  });
});

/** RunPodSandbox with a Docker that must not be reached: validation comes first. */
async function rejection(config: SandboxConfig): Promise<{ kind: string; message: string }> {
  const untouched = new Proxy(
    {},
    {
      get: () => {
        throw new Error('validation should have failed before using deps');
      },
    },
  );
  const run = runPodSandbox(untouched as ServiceDeps);
  try {
    await run({ config, runtime_handler: '' }, ctx);
  } catch (err) {
    return err as { kind: string; message: string };
  }
  throw new Error('expected a rejection');
}

describe('RunPodSandbox refuses hostile config', () => {
  const dns = (d: Record<string, string[]>): SandboxConfig =>
    pod({}, { dns_config: { servers: [], searches: [], options: [], ...d } });

  it.each([
    ['servers[0]', { servers: ['1.1.1.1\nnameserver 6.6.6.6'] }],
    ['servers[1]', { servers: ['1.1.1.1', '8.8.8.8 9.9.9.9'] }],
    ['servers[0]', { servers: ['1.1.1.1\u0000'] }],
    ['searches[0]', { searches: ['a.local\noptions debug'] }],
    ['searches[0]', { searches: ['a b'] }],
    ['options[0]', { options: ['ndots:5\tdebug'] }],
    ['options[0]', { options: ['ndots:5\r\nnameserver 6.6.6.6'] }],
  ])('dns_config.%s', async (field, d) => {
    const err = await rejection(dns(d));
    expect(err.kind).toBe('invalid-argument');
    expect(err.message).toContain(`config.dns_config.${field}`);
  });

  it.each(['../../etc', '/kubepods/../..', 'kubepods/..', 'a\u0000b'])('cgroup_parent %j', async (parent) => {
    const err = await rejection(pod({ cgroup_parent: parent }));
    expect(err.kind).toBe('invalid-argument');
    expect(err.message).toContain('config.linux.cgroup_parent');
  });

  it.each([
    [{ 'net.core.somaxconn\nkernel.x': '1' }],
    [{ 'net.core.somaxconn': '1\nkernel.panic=1' }],
    [{ 'net.core.somaxconn': '1\u0000' }],
    [{ 'kernel\u0000shm': '1' }],
  ])('sysctls %j', async (sysctls) => {
    const err = await rejection(pod({ sysctls }));
    expect(err.kind).toBe('invalid-argument');
    expect(err.message).toContain('config.linux.sysctls');
  });
});

/** Fakes for a full RunPodSandbox: the checkpoint write that marks the pod ready fails. */
function failingReadyDeps(cgroupDriver = 'cgroupfs') {
  const calls: string[] = [];
  const writes: string[] = [];
  let torn: PodNetworkRequest | undefined;
  const docker = new FakeEngine();
  docker.addImage({ Id: 'sha256:x', RepoTags: ['pause:1'] });
  docker.fail('startContainer', () => void calls.push('start'));
  docker.fail('removeContainer', () => void calls.push('remove container'));
  const fake = {
    config: { podInfraContainerImage: 'pause:1', rootDirectory: '/var/lib/crishim-test' },
    sandboxOomScoreAdj: -998,
    engine: { current: () => ({ reachable: true, runtimes: ['runc'], cgroupDriver }) },
    docker,
    checkpoints: {
      write: async (_id: string, body: { crishim: { phase: string } }) => {
        writes.push(body.crishim.phase);
        if (body.crishim.phase === 'ready') throw new Error('disk full');
      },
      remove: async () => void calls.push('remove checkpoint'),
    },
    network: {
      name: 'cni',
      setUpPod: async () => {
        calls.push('setup');
        return { ips: ['10.88.0.5'], networkName: 'crishim' };
      },
      tearDownPod: async (req: PodNetworkRequest) => {
        calls.push('teardown');
        torn = req;
      },
    },
  };
  const createdId = (): unknown => docker.calls.find((c) => c.call === 'startContainer')?.args[0];
  const createdSpec = (): Docker.ContainerCreateOptions | undefined =>
    docker.calls.find((c) => c.call === 'createContainer')?.args[0] as Docker.ContainerCreateOptions | undefined;
  // only what RunPodSandbox reads: the rest of ServiceDeps is never touched
  return { deps: fake as unknown as ServiceDeps, docker, calls, writes, torn: () => torn, createdId, createdSpec };
}

describe('RunPodSandbox rollback', () => {
  it('tears the pod network down when marking the checkpoint ready fails', async () => {
    const f = failingReadyDeps();
    await expect(runPodSandbox(f.deps)({ config: pod(), runtime_handler: '' }, ctx)).rejects.toThrow(
      /mark checkpoint ready.*disk full/,
    );
    expect(f.writes).toEqual(['creating', 'ready']);
    // newest first: network, then the checkpoint, then the container
    expect(f.calls).toEqual(['start', 'setup', 'teardown', 'remove checkpoint', 'remove container']);
    expect(f.createdId()).toMatch(/^[0-9a-f]{64}$/);
    expect(f.torn()).toMatchObject({
      sandboxId: f.createdId(),
      podName: 'web',
      podNamespace: 'default',
      podUid: 'u-1',
      netnsPath: '/proc/4242/ns/net',
    });
    expect(f.torn()?.signal).toBeUndefined();
  });
});

describe('RunPodSandbox cgroup parent and Docker cgroup driver', () => {
  const run = async (driver: string, parent: string) => {
    const f = failingReadyDeps(driver);
    const err = await runPodSandbox(f.deps)({ config: pod({ cgroup_parent: parent }), runtime_handler: '' }, ctx).then(
      () => undefined,
      (e: { kind?: string; message: string }) => e,
    );
    return { err, spec: f.createdSpec(), calls: f.docker.calls.length };
  };
  const slicePath = '/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice';

  it('gives Docker on systemd the slice name of a systemd-driver kubelet', async () => {
    const { spec } = await run('systemd', slicePath);
    expect(spec?.HostConfig?.CgroupParent).toBe('kubepods-besteffort-pod1.slice');
  });

  it('gives Docker on cgroupfs the path as the kubelet wrote it', async () => {
    expect((await run('cgroupfs', '/kubepods/besteffort/pod1')).spec?.HostConfig?.CgroupParent).toBe(
      '/kubepods/besteffort/pod1',
    );
  });

  it('refuses a cgroupfs path when Docker uses systemd, before touching Docker', async () => {
    const { err, spec, calls } = await run('systemd', '/kubepods/besteffort/pod1');
    expect(err?.kind).toBe('failed-precondition');
    expect(err?.message).toMatch(/config\.linux\.cgroup_parent "\/kubepods\/besteffort\/pod1" is not a systemd slice/);
    expect(err?.message).toContain('cgroupDriver systemd');
    expect(spec).toBeUndefined();
    expect(calls).toBe(0);
  });
});
