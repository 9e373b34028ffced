import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import { call, codeOf, podConfig, scrapeMetrics, startCrishim, teardown, waitForLog, type Crishim } from './harness';

jest.setTimeout(120_000);

// a one-shot command that hangs must fail its test, not hold jest's process (spawnSync blocks it)
const ONE_SHOT = { encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' } as const;

function dockerRequests(metrics: string): number {
  return metrics
    .split('\n')
    .filter((l) => l.startsWith('crishim_docker_request_duration_seconds_count'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

describe('running it the way operators do', () => {
  let h: Crishim | undefined;
  afterEach(async () => {
    await teardown(h);
    h = undefined;
  });

  it('runs with the flags of a cri-dockerd unit file and logs every RPC once as JSON', async () => {
    // the flags cri-dockerd units pass (paths pointed at the test's own directories by the harness where it must);
    // --runtime-cgroups acts on a fake cgroup tree, so the daemon never leaves the cgroups this test runs in
    const cgroupRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cgroup-'));
    await fsp.mkdir(path.join(cgroupRoot, 'memory'));
    const mounts = path.join(cgroupRoot, 'mounts');
    await fsp.writeFile(mounts, `cgroup ${cgroupRoot}/memory cgroup rw,relatime,memory 0 0\n`);
    h = await startCrishim({
      subnetIndex: 207,
      env: { CRISHIM_CGROUP_MOUNTS_FILE: mounts },
      args: [
        '--network-plugin=cni',
        '--cni-bin-dir=/opt/cni/bin,/usr/lib/cni',
        '--pod-infra-container-image=registry.k8s.io/pause:3.10',
        '--pod-cidr=10.88.207.0/24',
        '--runtime-cgroups=/system.slice/crishim.service',
        '--streaming-bind-addr=127.0.0.1:0',
        '--log-format=json',
        '--metrics-bind-address=127.0.0.1:0',
      ],
    });
    const procs = await fsp.readFile(
      path.join(cgroupRoot, 'memory', 'system.slice', 'crishim.service', 'cgroup.procs'),
      'utf8',
    );
    await fsp.rm(cgroupRoot, { recursive: true, force: true });
    expect(procs).toBe(`${h.proc.pid}\n`);
    const config = podConfig('operator');
    const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
    await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id });
    // ids no container has: the calls fail before any lookup succeeds
    const unknownRead = 'c0ffee'.repeat(10) + 'c0de';
    const unknownMutation = 'deadbeef'.repeat(8);
    expect((await codeOf(call(h.runtime, 'ContainerStatus', { container_id: unknownRead }))).code).toBe(
      grpc.status.NOT_FOUND,
    );
    expect((await codeOf(call(h.runtime, 'StartContainer', { container_id: unknownMutation }))).code).toBe(
      grpc.status.NOT_FOUND,
    );
    await call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
    await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });

    const lines = (await fsp.readFile(h.logFile, 'utf8'))
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(typeof l.level).toBe('string');
    const run = lines.filter((l) => l.message === 'RunPodSandbox' && l.rpc === 'RunPodSandbox');
    expect(run).toHaveLength(1);
    expect(run[0]).toMatchObject({ level: 'info', code: 'OK', podSandboxId: id });
    expect(typeof run[0].ms).toBe('number');
    expect(lines.filter((l) => l.message === 'StopPodSandbox' && l.podSandboxId === id)).toHaveLength(1);
    // reads at debug, mutations at info, failures before any lookup still name the id they were asked about
    const only = (message: string): Record<string, unknown> => {
      const found = lines.filter((l) => l.message === message && l.rpc === message);
      expect(found).toHaveLength(1);
      return found[0];
    };
    expect(only('PodSandboxStatus')).toMatchObject({ level: 'debug', code: 'OK', podSandboxId: id });
    expect(only('ContainerStatus')).toMatchObject({ level: 'debug', code: 'NOT_FOUND', containerId: unknownRead });
    expect(only('StartContainer')).toMatchObject({ level: 'info', code: 'NOT_FOUND', containerId: unknownMutation });
    expect(only('StopPodSandbox')).toMatchObject({ level: 'info', code: 'OK' });
  });

  it('serves Status from cache: no Docker round trip per call', async () => {
    h = await startCrishim({ subnetIndex: 208, args: ['--metrics-bind-address=127.0.0.1:0', '--network-plugin=none'] });
    const before = dockerRequests(await scrapeMetrics(h));
    for (let i = 0; i < 50; i++) await call(h.runtime, 'Status', {});
    const after = dockerRequests(await scrapeMetrics(h));
    // the only Docker traffic meanwhile can be the background health probe
    expect(after - before).toBeLessThanOrEqual(3);
  });

  it('gives the JS heap back once it has grown --heap-trim-step MiB', async () => {
    h = await startCrishim({ subnetIndex: 208, args: ['--network-plugin=none', '--heap-trim-step=1'] });
    const daemon = h;
    // calls in flight keep garbage alive past scavenges, so the old space grows; a check runs every 10 s
    let trimmed = false;
    const load = (async () => {
      while (!trimmed)
        await Promise.all(Array.from({ length: 20 }, () => call(daemon.runtime, 'Status', { verbose: true })));
    })();
    try {
      const log = await waitForLog(daemon, /heap trimmed/, 60_000);
      const line = log.split('\n').find((l) => l.includes('heap trimmed')) ?? '';
      const before = Number(/oldSpaceMiB=([\d.]+)/.exec(line)?.[1]);
      const after = Number(/afterMiB=([\d.]+)/.exec(line)?.[1]);
      expect(before - after).toBeGreaterThanOrEqual(1);
    } finally {
      trimmed = true;
      await load;
    }
  });
});

describe('the CLI', () => {
  it('prints every flag with its default in --help and fails clearly on unknown flags', async () => {
    const { spawnSync } = await import('child_process');
    const main = path.join(__dirname, '..', '..', 'dist', 'main.js');
    const help = spawnSync(process.execPath, [main, '--help'], ONE_SHOT);
    expect(help.status).toBe(0);
    for (const flag of [
      '--container-runtime-endpoint',
      '--docker-endpoint',
      '--network-plugin',
      '--cni-conf-dir',
      '--cni-bin-dir',
      '--cni-cache-dir',
      '--pod-infra-container-image',
      '--pod-cidr',
      '--runtime-cgroups',
      '--streaming-bind-addr',
      '--log-level',
      '--log-format',
      '--cri-dockerd-root-directory',
      '--version',
    ]) {
      expect(help.stdout).toContain(flag);
    }
    expect(help.stdout).toContain('(default: "unix:///run/crishim/crishim.sock")');
    const bad = spawnSync(process.execPath, [main, '--hairpin-mode=promiscuous-bridge'], ONE_SHOT);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown option '--hairpin-mode/);
    const version = spawnSync(process.execPath, [main, '--version'], ONE_SHOT);
    expect(version.stdout).toMatch(/^crishim \d+\.\d+\.\d+\nCRI API v1\nDocker API \d+\.\d+\n$/);
  });
});
