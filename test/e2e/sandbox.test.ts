import { execFile } from 'child_process';
import { promises as fsp } from 'fs';
import * as path from 'path';
import { status } from '@grpc/grpc-js';
import { lowestOomScoreAdj } from '../../src/docker/oom-score';
import {
  call,
  checkpointFiles,
  codeOf,
  containersOfPod,
  docker,
  podConfig,
  reservedIps,
  sh,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';

jest.setTimeout(120_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 201 });
});
afterAll(() => teardown(h));

function ipInSubnet(ip: string, subnet: string): boolean {
  const prefix = subnet.split('.').slice(0, 3).join('.') + '.';
  return ip.startsWith(prefix);
}

async function cacheFiles(): Promise<string[]> {
  return fsp.readdir(h.cniCacheDir).catch(() => [] as string[]);
}

describe('runtime info', () => {
  it('reports docker as the runtime and CRI v1', async () => {
    const v = await call(h.runtime, 'Version', {});
    expect(v.runtime_name).toBe('docker');
    expect(v.runtime_api_version).toBe('v1');
    const engine = await docker.version();
    expect(v.runtime_version).toBe(engine.Version);
  });

  it('is RuntimeReady and NetworkReady with a valid CNI config', async () => {
    const s = await call(h.runtime, 'Status', { verbose: true });
    const cond = Object.fromEntries((s.status?.conditions ?? []).map((c) => [c.type, c.status]));
    expect(cond).toEqual({ RuntimeReady: true, NetworkReady: true });
    expect(JSON.parse(s.info?.config ?? '{}').cniConfig).toBe(`crishim-${h.cni.bridge}`);
  });
});

describe('pod sandbox lifecycle with CNI', () => {
  it('runs a sandbox with a pod IP reachable from the host, then stops and removes it without leftovers', async () => {
    const config = podConfig('lifecycle', { port_mappings: [] });
    const uid = (config.metadata as { uid: string }).uid;
    const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
    expect(id).toMatch(/^[0-9a-f]{64}$/);

    // Docker side: dockershim name and labels
    const info = await docker.getContainer(id).inspect();
    expect(info.Name).toBe(`/k8s_POD_lifecycle_crishim-e2e_${uid}_0`);
    expect(info.Config.Labels).toMatchObject({
      'io.kubernetes.docker.type': 'podsandbox',
      'io.kubernetes.pod.name': 'lifecycle',
      'io.kubernetes.pod.namespace': 'crishim-e2e',
      'io.kubernetes.pod.uid': uid,
      test: 'lifecycle',
    });
    // -998 as dockershim gives it, or the lowest value this kernel accepts (see design notes)
    expect(info.HostConfig.OomScoreAdj).toBe(Math.max(-998, await lowestOomScoreAdj(-998)));
    expect(Number(sh('cat', [`/proc/${info.State.Pid}/oom_score_adj`]).trim())).toBe(info.HostConfig.OomScoreAdj);
    expect(info.State.Running).toBe(true);

    // status: ready with an IP in the test subnet
    const st = await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id, verbose: true });
    expect(st.status?.state).toBe('SANDBOX_READY');
    expect(st.status?.metadata).toMatchObject({ name: 'lifecycle', namespace: 'crishim-e2e', uid });
    expect(st.status?.annotations).toEqual({ 'e2e/uid': uid });
    const ip = st.status?.network?.ip ?? '';
    expect(ipInSubnet(ip, h.cni.subnet)).toBe(true);

    // the pod netns really has eth0 with that IP, and the host reaches it
    const addr = sh('nsenter', ['-t', String(info.State.Pid), '-n', 'ip', '-4', '-o', 'addr', 'show', 'eth0']);
    expect(addr).toContain(`${ip}/`);
    expect(() => sh('ping', ['-c', '1', '-W', '3', ip])).not.toThrow();
    expect(await reservedIps(h.cni.ipamDir)).toContain(ip);
    expect(await checkpointFiles(h)).toContain(`${id}.json`);

    // list with filters
    const byLabel = await call(h.runtime, 'ListPodSandbox', { filter: { label_selector: { test: 'lifecycle' } } });
    expect(byLabel.items?.map((s) => s.id)).toEqual([id]);
    const byId = await call(h.runtime, 'ListPodSandbox', { filter: { id: id.slice(0, 12) } });
    expect(byId.items?.map((s) => s.id)).toEqual([id]);
    const notReady = await call(h.runtime, 'ListPodSandbox', { filter: { id, state: { state: 'SANDBOX_NOTREADY' } } });
    expect(notReady.items).toEqual([]);

    // stop: network released, sandbox NOTREADY; twice is fine
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    const stopped = await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id });
    expect(stopped.status?.state).toBe('SANDBOX_NOTREADY');
    expect(await reservedIps(h.cni.ipamDir)).not.toContain(ip);
    expect(await cacheFiles()).toEqual([]);

    // remove: nothing left; twice is fine
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    expect(await containersOfPod(uid)).toEqual([]);
    expect(await checkpointFiles(h)).toEqual([]);
    expect((await codeOf(call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id }))).code).toBe(status.NOT_FOUND);
  });

  it('runs a host-network sandbox without CNI', async () => {
    const config = podConfig('hostnet', {
      linux: { security_context: { namespace_options: { network: 'NODE', pid: 'POD', ipc: 'POD' } } },
    });
    const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
    const info = await docker.getContainer(id).inspect();
    expect(info.HostConfig.NetworkMode).toBe('host');
    const st = await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id });
    expect(st.status?.state).toBe('SANDBOX_READY');
    expect(st.status?.linux?.namespaces?.options?.network).toBe('NODE');
    expect(await cacheFiles()).toEqual([]);
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    expect(await containersOfPod((config.metadata as { uid: string }).uid)).toEqual([]);
  });

  it('writes the requested DNS config and hostname into the sandbox', async () => {
    const config = podConfig('dns', {
      hostname: 'dns-host',
      dns_config: { servers: ['10.96.0.10'], searches: ['svc.cluster.local'], options: ['ndots:5'] },
    });
    const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
    const info = await docker.getContainer(id).inspect();
    const resolv = await fsp.readFile(info.ResolvConfPath, 'utf8');
    expect(resolv).toBe('nameserver 10.96.0.10\nsearch svc.cluster.local\noptions ndots:5\n');
    expect(info.Config.Hostname).toBe('dns-host');
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
  });
});

describe('bad requests', () => {
  it('answers INVALID_ARGUMENT naming the field', async () => {
    const noMeta = await codeOf(call(h.runtime, 'RunPodSandbox', { config: {} }));
    expect(noMeta.code).toBe(status.INVALID_ARGUMENT);
    expect(noMeta.details).toMatch(/metadata/);
    const slash = await codeOf(call(h.runtime, 'RunPodSandbox', { config: podConfig('a/b') }));
    expect(slash.code).toBe(status.INVALID_ARGUMENT);
    expect(slash.details).toMatch(/metadata\.name/);
    const empty = await codeOf(call(h.runtime, 'RunPodSandbox', {}));
    expect(empty.code).toBe(status.INVALID_ARGUMENT);
    const handler = await codeOf(
      call(h.runtime, 'RunPodSandbox', { config: podConfig('rh'), runtime_handler: 'no-such-runtime' }),
    );
    expect(handler.code).toBe(status.INVALID_ARGUMENT);
    expect(handler.details).toMatch(/no-such-runtime/);
  });

  it('answers NOT_FOUND for unknown sandboxes, OK for removing them', async () => {
    const unknown = 'f'.repeat(64);
    const st = await codeOf(call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: unknown }));
    expect(st.code).toBe(status.NOT_FOUND);
    expect(st.details).toContain(unknown);
    expect((await codeOf(call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: unknown }))).code).toBe(status.NOT_FOUND);
    await expect(call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: unknown })).resolves.toEqual({});
    expect((await codeOf(call(h.runtime, 'PodSandboxStatus', {}))).code).toBe(status.INVALID_ARGUMENT);
  });
});

describe('CNI failure', () => {
  it('fails RunPodSandbox with the plugin named and leaves nothing behind', async () => {
    // a higher-priority config whose plugin binary does not exist
    const broken = {
      cniVersion: '0.4.0',
      name: 'broken',
      plugins: [{ type: 'crishim-missing-plugin' }],
    };
    const file = path.join(h.cniConfDir, '00-broken.conflist');
    await fsp.writeFile(file, JSON.stringify(broken));
    try {
      // the manager re-probes the directory: wait until Status says not ready
      const deadline = Date.now() + 15_000;
      for (;;) {
        const s = await call(h.runtime, 'Status', {});
        const net = s.status?.conditions?.find((c) => c.type === 'NetworkReady');
        if (net && !net.status) {
          expect(net.reason).toBe('NetworkPluginNotReady');
          expect(net.message).toContain('crishim-missing-plugin');
          break;
        }
        if (Date.now() > deadline) throw new Error('NetworkReady never flipped to false');
        await new Promise((r) => setTimeout(r, 250));
      }
      const config = podConfig('cnifail');
      const err = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
      expect(err.details).toContain('crishim-missing-plugin');
      expect(await containersOfPod((config.metadata as { uid: string }).uid)).toEqual([]);
      expect(await checkpointFiles(h)).toEqual([]);
      expect(await cacheFiles()).toEqual([]);
      expect(await reservedIps(h.cni.ipamDir)).toEqual([]);
    } finally {
      await fsp.rm(file, { force: true });
    }
    // and the valid config is picked up again without a restart
    const deadline = Date.now() + 15_000;
    for (;;) {
      const s = await call(h.runtime, 'Status', {});
      if (s.status?.conditions?.find((c) => c.type === 'NetworkReady')?.status) break;
      if (Date.now() > deadline) throw new Error('NetworkReady never came back');
      await new Promise((r) => setTimeout(r, 250));
    }
  });
});

describe('daemon restart', () => {
  it('keeps the sandbox listed and still tears its network down after a restart', async () => {
    const config = podConfig('restart');
    const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
    const ip = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status?.network?.ip ?? '';
    expect(await reservedIps(h.cni.ipamDir)).toContain(ip);

    await h.restart({ kill: true });
    const listed = await call(h.runtime, 'ListPodSandbox', { filter: { id } });
    expect(listed.items?.map((s) => [s.id, s.state])).toEqual([[id, 'SANDBOX_READY']]);
    expect((await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status?.network?.ip).toBe(ip);

    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    expect(await reservedIps(h.cni.ipamDir)).not.toContain(ip);
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    expect(await containersOfPod((config.metadata as { uid: string }).uid)).toEqual([]);
  });

  it('lists a sandbox whose pause container vanished as NOTREADY and can still stop and remove it', async () => {
    const config = podConfig('vanished');
    const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
    const ip = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status?.network?.ip ?? '';
    await docker.getContainer(id).remove({ force: true });
    const listed = await call(h.runtime, 'ListPodSandbox', { filter: { id } });
    expect(listed.items?.map((s) => s.state)).toEqual(['SANDBOX_NOTREADY']);
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    expect(await reservedIps(h.cni.ipamDir)).not.toContain(ip);
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    expect(await checkpointFiles(h)).toEqual([]);
  });
});

describe('socket handling', () => {
  it('refuses to start over a live socket', async () => {
    // not spawnSync: a second daemon that wrongly started serving would block jest's whole
    // process until it exited, where this way the test fails and says so
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [
          path.join(__dirname, '..', '..', 'dist', 'main.js'),
          '--container-runtime-endpoint',
          `unix://${h.socket}`,
          '--root-directory',
          path.join(h.dir, 'other'),
        ],
        { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' },
        (_err, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(r.stderr).toMatch(/already serving/);
    expect(r.code).toBe(1);
    // the live daemon is unharmed
    await expect(call(h.runtime, 'Version', {})).resolves.toBeDefined();
  });

  it('serves with mode 0660', async () => {
    expect((await fsp.stat(h.socket)).mode & 0o777).toBe(0o660);
  });

  it('answers UNIMPLEMENTED naming the method for RPCs it lacks', async () => {
    const r = await codeOf(call(h.runtime, 'CheckpointPod', { pod_sandbox_id: 'x' }));
    expect(r.code).toBe(status.UNIMPLEMENTED);
    expect(r.details).toContain('CheckpointPod');
  });
});
