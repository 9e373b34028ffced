/**
 * Hostile requests (issue 15): no request field may reach host files or crishim's own
 * state, impersonate another pod, or touch containers crishim does not manage.
 */
import { promises as fsp } from 'fs';
import * as path from 'path';
import { status } from '@grpc/grpc-js';
import { execFileSync } from 'child_process';
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
  type LoggedPod,
} from './harness';

jest.setTimeout(180_000);

let h: Crishim;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 247 });
});
afterAll(() => teardown(h));

type Pod = LoggedPod;
const runPod = (name: string): Promise<Pod> => runLoggedPod(h, name);

function containerRequest(
  pod: Pick<Pod, 'id' | 'config'>,
  name: string,
  extra: Record<string, unknown> = {},
  sandboxExtra: Record<string, unknown> = {},
) {
  return {
    pod_sandbox_id: pod.id,
    config: {
      metadata: { name, attempt: 0 },
      image: { image: BUSYBOX },
      command: ['sh', '-c', 'echo hostile-output; sleep 3600'],
      ...extra,
    },
    sandbox_config: { ...pod.config, ...sandboxExtra },
  };
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('request labels cannot take over crishim’s own', () => {
  it('refuses a logpath label, io.crishim.* and annotation.* labels, naming the key', async () => {
    const pod = await runPod('labels');
    const victim = path.join(h.dir, 'victim.txt');
    await fsp.writeFile(victim, 'precious\n');
    for (const key of ['io.kubernetes.container.logpath', 'io.crishim.implicit-labels', 'annotation.x']) {
      const r = await codeOf(
        call(h.runtime, 'CreateContainer', containerRequest(pod, 'lbl', { labels: { [key]: victim } })),
      );
      expect(r.code).toBe(status.INVALID_ARGUMENT);
      expect(r.details).toContain(key);
    }
    expect(await fsp.readFile(victim, 'utf8')).toBe('precious\n');
  });

  it('refuses pod identity labels that differ from the metadata (no kube-system/kube-apiserver spoof)', async () => {
    const config = podConfig('spoof', {
      labels: { 'io.kubernetes.pod.namespace': 'kube-system', 'io.kubernetes.pod.name': 'kube-apiserver' },
    });
    const r = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
    expect(r.code).toBe(status.INVALID_ARGUMENT);
    expect(r.details).toMatch(/io\.kubernetes\.pod\.(namespace|name)/);
    // the kubelet's own identity labels (equal to the metadata) still pass and are reported as sent
    const meta = config.metadata as { name: string; namespace: string; uid: string };
    const ok = podConfig('kubelet-like');
    const m = ok.metadata as { name: string; namespace: string; uid: string };
    ok.labels = {
      'io.kubernetes.pod.name': m.name,
      'io.kubernetes.pod.namespace': m.namespace,
      'io.kubernetes.pod.uid': m.uid,
    };
    const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config: ok });
    const st = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status;
    expect(st?.metadata?.namespace).toBe(m.namespace);
    expect(st?.labels).toEqual(ok.labels);
    expect(meta.namespace).not.toBe('kube-system');
  });
});

describe('log paths stay inside the pod log directory and out of crishim’s state', () => {
  it('refuses a log_directory inside the root directory or the CNI cache', async () => {
    const pod = await runPod('logroot');
    for (const dir of [path.join(h.rootDir, 'sandbox'), h.cniCacheDir, h.rootDir]) {
      const r = await codeOf(
        call(
          h.runtime,
          'CreateContainer',
          containerRequest(pod, 'inroot', { log_path: `${pod.id}.json` }, { log_directory: dir }),
        ),
      );
      expect(r.code).toBe(status.INVALID_ARGUMENT);
      expect(r.details).toMatch(/crishim's own state/);
    }
  });

  it('refuses a directory symlink in log_path and a symlinked log file', async () => {
    const pod = await runPod('logsym');
    const elsewhere = path.join(h.dir, 'elsewhere');
    await fsp.mkdir(elsewhere, { recursive: true });
    await fsp.writeFile(path.join(elsewhere, 'c.log'), 'precious\n');
    await fsp.symlink(elsewhere, path.join(pod.logDir, 'sub'));
    const viaDir = await codeOf(
      call(h.runtime, 'CreateContainer', containerRequest(pod, 'sym1', { log_path: 'sub/c.log' })),
    );
    expect(viaDir.code).toBe(status.INVALID_ARGUMENT);
    await fsp.symlink(path.join(elsewhere, 'c.log'), path.join(pod.logDir, 'link.log'));
    const viaFile = await codeOf(
      call(h.runtime, 'CreateContainer', containerRequest(pod, 'sym2', { log_path: 'link.log' })),
    );
    expect(viaFile.code).toBe(status.INVALID_ARGUMENT);
    expect(await fsp.readFile(path.join(elsewhere, 'c.log'), 'utf8')).toBe('precious\n');
  });

  it('never appends through or deletes via a directory symlink planted after create', async () => {
    const pod = await runPod('logswap');
    const { container_id: id } = await call(
      h.runtime,
      'CreateContainer',
      containerRequest(pod, 'swap', { log_path: 'sub/c.log' }),
    );
    const elsewhere = path.join(h.dir, 'elsewhere2');
    await fsp.mkdir(elsewhere, { recursive: true });
    await fsp.writeFile(path.join(elsewhere, 'c.log'), 'precious\n');
    // the kubelet would have created nothing yet: plant the symlink where the log directory goes
    await fsp.rm(path.join(pod.logDir, 'sub'), { recursive: true, force: true });
    await fsp.symlink(elsewhere, path.join(pod.logDir, 'sub'));
    await call(h.runtime, 'StartContainer', { container_id: id });
    await new Promise((r) => setTimeout(r, 1500));
    await call(h.runtime, 'StopContainer', { container_id: id, timeout: '1' });
    await call(h.runtime, 'RemoveContainer', { container_id: id });
    expect(await fsp.readFile(path.join(elsewhere, 'c.log'), 'utf8')).toBe('precious\n');
  });

  it('ReopenContainerLog refuses a symlink planted in place of the rotated file', async () => {
    const pod = await runPod('logreopen');
    const { container_id: id } = await call(
      h.runtime,
      'CreateContainer',
      containerRequest(pod, 'reo', { log_path: 'reo/0.log' }),
    );
    await call(h.runtime, 'StartContainer', { container_id: id });
    const file = path.join(pod.logDir, 'reo', '0.log');
    await waitFor('first log line', async () =>
      (await fsp.readFile(file, 'utf8').catch(() => '')).includes('hostile-output') ? true : undefined,
    );
    const target = path.join(h.dir, 'reopen-target.txt');
    await fsp.writeFile(target, 'precious\n');
    await fsp.rename(file, `${file}.1`);
    await fsp.symlink(target, file);
    const r = await codeOf(call(h.runtime, 'ReopenContainerLog', { container_id: id }));
    expect(r.code).toBe(status.FAILED_PRECONDITION);
    expect(await fsp.readFile(target, 'utf8')).toBe('precious\n');
    await call(h.runtime, 'RemoveContainer', { container_id: id });
    // the symlink itself may go; its target stays
    expect(await fsp.readFile(target, 'utf8')).toBe('precious\n');
  });
});

describe('name collisions between pods', () => {
  it('pod p_q/container c and pod q/container c_p: the second create is refused, the first container stays', async () => {
    const base = podConfig('x');
    const { namespace, uid } = base.metadata as { namespace: string; uid: string };
    const mk = async (podName: string) => {
      const config = { ...base, metadata: { name: podName, namespace, uid, attempt: 0 }, hostname: 'collide' };
      const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
      return { id, config };
    };
    const a = await mk('p_q');
    const b = await mk('q');
    const { container_id: first } = await call(h.runtime, 'CreateContainer', containerRequest(a, 'c'));
    const r = await codeOf(call(h.runtime, 'CreateContainer', containerRequest(b, 'c_p')));
    expect(r.code).toBe(status.ALREADY_EXISTS);
    expect(r.details).toContain(`is reserved for ${first}`);
    expect((await docker.getContainer(first).inspect()).Id).toBe(first);
  });
});

describe('exec, exec sync and attach only reach crishim’s containers', () => {
  it('answers NOT_FOUND for a plain Docker container, as ContainerStatus does', async () => {
    const plain = await docker.createContainer({
      Image: BUSYBOX,
      Cmd: ['sleep', '300'],
      Labels: { 'crishim-e2e': 'hostile-plain' },
    });
    try {
      await plain.start();
      const id = plain.id;
      expect((await codeOf(call(h.runtime, 'ContainerStatus', { container_id: id }))).code).toBe(status.NOT_FOUND);
      expect((await codeOf(call(h.runtime, 'ExecSync', { container_id: id, cmd: ['true'], timeout: '5' }))).code).toBe(
        status.NOT_FOUND,
      );
      expect((await codeOf(call(h.runtime, 'Exec', { container_id: id, cmd: ['sh'], stdout: true }))).code).toBe(
        status.NOT_FOUND,
      );
      expect((await codeOf(call(h.runtime, 'Attach', { container_id: id, stdout: true }))).code).toBe(status.NOT_FOUND);
    } finally {
      await plain.remove({ force: true });
    }
  });
});

describe('seccomp Localhost profiles', () => {
  it('refuses a FIFO at once (no RPC waits on a writer), /dev/zero, and a non-profile file, never quoting it', async () => {
    const pod = await runPod('seccomp');
    const fifo = path.join(h.dir, 'profile.fifo');
    execFileSync('mkfifo', [fifo]);
    const secret = path.join(h.dir, 'shadow-like');
    await fsp.writeFile(secret, 'root:*:20234:0:99999:7:::\n');
    const notProfile = path.join(h.dir, 'other.json');
    await fsp.writeFile(notProfile, '{"name":"not a profile"}');
    for (const [file, why] of [
      [fifo, /not a regular file/],
      ['/dev/zero', /not a regular file/],
      [secret, /not valid JSON/],
      [notProfile, /not a seccomp profile/],
    ] as const) {
      const req = containerRequest(pod, 'sec', {
        linux: { security_context: { seccomp: { profile_type: 'Localhost', localhost_ref: file } } },
      });
      const r = await codeOf(call(h.runtime, 'CreateContainer', req, 10_000));
      expect(r.code).toBe(status.INVALID_ARGUMENT);
      expect(r.details).toMatch(why);
      expect(r.details).not.toContain('root:');
    }
    const sandbox = await codeOf(
      call(
        h.runtime,
        'RunPodSandbox',
        {
          config: podConfig('secfifo', {
            linux: { security_context: { seccomp: { profile_type: 'Localhost', localhost_ref: fifo } } },
          }),
        },
        10_000,
      ),
    );
    expect(sandbox.code).toBe(status.INVALID_ARGUMENT);
  });
});

describe('AppArmor Localhost on a host without AppArmor', () => {
  it('is refused instead of running unconfined', async () => {
    const enabled = await fsp
      .readFile('/sys/module/apparmor/parameters/enabled', 'utf8')
      .then((v) => v.startsWith('Y'))
      .catch(() => false);
    const pod = await runPod('apparmor');
    const req = containerRequest(pod, 'aa', {
      linux: { security_context: { apparmor: { profile_type: 'Localhost', localhost_ref: 'localhost/crishim-test' } } },
    });
    const r = call(h.runtime, 'CreateContainer', req);
    if (enabled) {
      // the profile does not exist here either way: Docker refuses at create or start
      await r.then(
        (res) => call(h.runtime, 'RemoveContainer', { container_id: res.container_id }),
        () => undefined,
      );
    } else {
      const c = await codeOf(r);
      expect(c.code).toBe(status.INVALID_ARGUMENT);
      expect(c.details).toMatch(/AppArmor is not enabled/);
    }
  });
});

describe('mounts', () => {
  it('refuses a symlink to the root directory as host_path', async () => {
    const pod = await runPod('mountlink');
    const link = path.join(h.dir, 'to-root');
    await fsp.symlink(h.rootDir, link);
    const r = await codeOf(
      call(
        h.runtime,
        'CreateContainer',
        containerRequest(pod, 'm', { mounts: [{ container_path: '/state', host_path: link }] }),
      ),
    );
    expect(r.code).toBe(status.INVALID_ARGUMENT);
    expect(r.details).toMatch(/state directory/);
  });
});

describe('RunPodSandbox validates before it acts', () => {
  it('refuses an out-of-range enum and a hostPort to container_port 0 with no pause container left', async () => {
    for (const port_mappings of [
      [{ protocol: 7, container_port: 80, host_port: 0 }],
      [{ protocol: 'TCP', container_port: 0, host_port: 18080 }],
    ]) {
      const config = podConfig('enum', { port_mappings });
      const r = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
      expect(r.code).toBe(status.INVALID_ARGUMENT);
      expect(r.details).toMatch(/port_mappings\[0\]/);
      expect(await containersOfPod((config.metadata as { uid: string }).uid)).toEqual([]);
    }
  });

  it('refuses a hostPort on crishim’s own streaming port', async () => {
    const pod = await runPod('streamport');
    const { container_id: id } = await call(h.runtime, 'CreateContainer', containerRequest(pod, 'sp'));
    await call(h.runtime, 'StartContainer', { container_id: id });
    const { url } = await call(h.runtime, 'Exec', { container_id: id, cmd: ['true'], stdout: true });
    const port = Number(new URL(url).port);
    const config = podConfig('capture', {
      port_mappings: [{ protocol: 'TCP', container_port: 8080, host_port: port }],
    });
    const r = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
    expect(r.code).toBe(status.INVALID_ARGUMENT);
    expect(r.details).toMatch(/crishim's own listeners/);
  });

  it('rolls back completely when the client cancels 50-100 ms in', async () => {
    const uids: string[] = [];
    await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const config = podConfig(`cancel${i}`);
        uids.push((config.metadata as { uid: string }).uid);
        await new Promise<void>((resolve) => {
          const c = h.runtime.RunPodSandbox({ config }, () => resolve());
          setTimeout(() => c.cancel(), 50 + (i * 50) / 11);
        });
      }),
    );
    // the handlers finish their rollback after the cancelled answer
    await waitFor(
      'no pause container of a cancelled call',
      async () => {
        const left = (await Promise.all(uids.map((u) => containersOfPod(u)))).flat();
        return left.length === 0 ? true : undefined;
      },
      60_000,
    );
  });
});

describe('Docker create requests', () => {
  it('carry a large config in the body: a 1.5 MB env value creates fine', async () => {
    const pod = await runPod('bigenv');
    const r = await call(
      h.runtime,
      'CreateContainer',
      containerRequest(pod, 'big', { envs: [{ key: 'BIG', value: Buffer.from('x'.repeat(1_500_000)) }] }),
    );
    const info = await docker.getContainer(r.container_id).inspect();
    expect(info.Config.Env.find((e) => e.startsWith('BIG='))?.length).toBe(1_500_004);
  });
});
