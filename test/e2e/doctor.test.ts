/** `crishim doctor` against this machine's real Docker, CNI plugins and kernel. */
import { spawn, spawnSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { dockerCgroupDriver } from '../support/cgroups';
import { REPO, startCrishim, teardown, waitForLog, writeCniConfig, type Crishim } from './harness';

const MAIN = path.join(REPO, 'dist', 'main.js');
// a daemon's start and the waits below (up to 20 s for a log line) outlast jest's 5 s default on a slow host
jest.setTimeout(60_000);

function doctor(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, 'doctor', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('crishim doctor', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-doctor-'));
  });
  afterAll(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('passes on this machine with a CNI config: exit 0, one line per check, no fail', async () => {
    const confDir = path.join(dir, 'net.d');
    await writeCniConfig(confDir, { bridge: 'critdoc', subnet: '10.88.245.0/24', ipamDir: path.join(dir, 'ipam') });
    const r = doctor([
      '--cni-conf-dir',
      confDir,
      '--root-directory',
      path.join(dir, 'root'),
      '--container-runtime-endpoint',
      `unix://${dir}/c.sock`,
    ]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.filter((l) => /^(ok|warn|fail) /.test(l)).map((l) => l.split(/\s+/)[1])).toEqual([
      'docker-endpoint',
      'docker-version',
      'cgroup',
      'kubelet-cgroup-driver',
      'cni-config',
      'pod-forwarding',
      'sandbox-image',
      'root-directory',
      'cri-socket',
      'oom-score-adj',
      'capabilities',
      'kernel-features',
    ]);
    expect(r.stdout).not.toMatch(/^fail/m);
    expect(r.stdout).toMatch(new RegExp(`^ok +cni-config +${confDir}/10-crishim.conflist`, 'm'));
    expect(r.stdout).toMatch(/^ok +pod-forwarding +\S+ accepts pod traffic in FORWARD/m);
    expect(r.stdout).toMatch(/^ok +docker-version +Docker Engine \S+, API 1\.\d+ negotiated/m);
  });

  it('fails naming the CNI config dir when it is empty, in text and in JSON', async () => {
    const empty = path.join(dir, 'empty');
    await fsp.mkdir(empty);
    const r = doctor(['--cni-conf-dir', empty, '--root-directory', path.join(dir, 'root')]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^fail +cni-config +no CNI configuration file in ${empty}`, 'm'));
    const j = doctor(['--cni-conf-dir', empty, '--root-directory', path.join(dir, 'root'), '--output', 'json']);
    expect(j.status).toBe(1);
    const parsed = JSON.parse(j.stdout) as {
      ok: boolean;
      checks: Array<{ name: string; status: string; found: string }>;
    };
    expect(parsed.ok).toBe(false);
    expect(parsed.checks.filter((c) => c.status === 'fail').map((c) => c.name)).toEqual(['cni-config']);
  });

  it("warns when a running kubelet's --cgroup-driver is not Docker's, found through /proc", async () => {
    const docker = dockerCgroupDriver();
    const other = docker === 'systemd' ? 'cgroupfs' : 'systemd';
    // a shell under the name kubelet: /proc/<pid>/comm reads "kubelet", the flag is in its command line
    const fakeKubelet = path.join(dir, 'kubelet');
    await fsp.copyFile('/bin/sh', fakeKubelet);
    await fsp.chmod(fakeKubelet, 0o755);
    const proc = spawn(fakeKubelet, ['-c', 'sleep 60; :', `--cgroup-driver=${other}`], { stdio: 'ignore' });
    try {
      const r = doctor(['--root-directory', path.join(dir, 'root')]);
      expect(r.stdout).toContain(
        `warn  kubelet-cgroup-driver  the kubelet is set to ${other} (the running kubelet's --cgroup-driver), Docker uses ${docker}`,
      );
    } finally {
      proc.kill('SIGKILL');
    }
  });

  it('fails on an unreachable Docker endpoint', () => {
    const r = doctor(['--docker-endpoint', `unix://${dir}/no-docker.sock`, '--root-directory', path.join(dir, 'root')]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(`^fail +docker-endpoint +Docker does not answer at unix://${dir}/no-docker.sock`, 'm'),
    );
  });

  it('reports a Docker endpoint that accepts connections and never answers, instead of hanging', async () => {
    // a hung dockerd: the kernel accepts into the backlog, nothing ever answers
    const sock = path.join(dir, 'silent-docker.sock');
    const server = net.createServer(() => undefined);
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      const r = doctor(['--docker-endpoint', `unix://${sock}`, '--root-directory', path.join(dir, 'root')]);
      expect(r.status).toBe(1);
      expect(r.stdout).toMatch(
        new RegExp(`^fail +docker-endpoint +Docker does not answer at unix://${sock}: .*did not answer in time`, 'm'),
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  describe('at daemon start-up', () => {
    let h: Crishim | undefined;
    afterAll(() => teardown(h));
    it('logs the same checks', async () => {
      h = await startCrishim({ subnetIndex: 246 });
      // the checks run after the socket answers; the last one logged is kernel-features
      const log = await waitForLog(h, /check="kernel-features"/, 20_000);
      expect(log).toMatch(/host check ok check="cni-config" found="[^"]*10-crishim.conflist/);
      expect(log).toMatch(/host check ok check="docker-endpoint"/);
    });
  });
});
