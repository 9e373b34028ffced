import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { hostProbes, kubeletArgs, kubeletVersion } from '../../src/doctor/probes';
import { which } from '../../src/host-binaries';
import { DockerUnreachableError } from '../../src/docker/errors';
import { FakeEngine } from '../support/fake-engine';

/** The real probes on temp files (no Docker call is made by these). */
describe('doctor host probes', () => {
  let dir: string;
  const docker = new FakeEngine();
  docker.fail(
    'imageDistribution',
    () => new DockerUnreachableError('resolve image pause:1 in its registry: docker daemon unreachable (ENOENT)'),
  );
  const probes = hostProbes(docker);
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-probes-'));
  });
  afterAll(() => fsp.rm(dir, { recursive: true, force: true }));

  it('socketState: absent, live, stale, not a socket', async () => {
    const sock = path.join(dir, 's.sock');
    expect(await probes.socketState(sock)).toBe('absent');
    const server = net.createServer().listen(sock);
    await new Promise((r) => server.once('listening', r));
    expect(await probes.socketState(sock)).toBe('live');
    // a socket file nobody listens on any more
    const stale = path.join(dir, 'stale.sock');
    execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', stale]); // bound, never listened, gone
    expect(await probes.socketState(stale)).toBe('stale');
    await new Promise((r) => server.close(r));
    await fsp.writeFile(path.join(dir, 'plain'), 'x');
    expect(await probes.socketState(path.join(dir, 'plain'))).toBe('not-a-socket');
  });

  it('writeError: undefined for a writable dir (created), the error under a regular file', async () => {
    expect(await probes.writeError(path.join(dir, 'root', 'deeper'))).toBeUndefined();
    expect(await fsp.readdir(path.join(dir, 'root', 'deeper'))).toEqual([]);
    await fsp.writeFile(path.join(dir, 'file'), 'x');
    expect(await probes.writeError(path.join(dir, 'file', 'sub'))).toMatch(/ENOTDIR|EEXIST/);
  });

  it('kubeletArgs: the command line of each process named kubelet, from a /proc tree', async () => {
    const proc = path.join(dir, 'proc');
    const fake = async (pid: string, comm: string, cmdline: string) => {
      await fsp.mkdir(path.join(proc, pid), { recursive: true });
      await fsp.writeFile(path.join(proc, pid, 'comm'), `${comm}\n`);
      await fsp.writeFile(path.join(proc, pid, 'cmdline'), cmdline);
    };
    await fake('17', 'kubelet', '/usr/bin/kubelet\0--config=/var/lib/kubelet/config.yaml\0--v\0\x32\0');
    await fake('18', 'dockerd', '/usr/bin/dockerd\0');
    await fake('19', 'kubelet', ''); // a zombie: no command line
    await fsp.mkdir(path.join(proc, 'self'), { recursive: true });
    expect(await kubeletArgs(proc)).toEqual([
      ['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml', '--v', '2'],
    ]);
  });

  it('kubeletArgs: a relative --config is read from where the kubelet runs', async () => {
    const proc = path.join(dir, 'proc-cwd');
    const fake = async (pid: string, cwd: string, args: string[]) => {
      await fsp.mkdir(path.join(proc, pid), { recursive: true });
      await fsp.writeFile(path.join(proc, pid, 'comm'), 'kubelet\n');
      await fsp.writeFile(path.join(proc, pid, 'cmdline'), `${args.join('\0')}\0`);
      await fsp.symlink(cwd, path.join(proc, pid, 'cwd'));
    };
    await fake('21', '/var/lib/kubelet', ['kubelet', '--config=config.yaml', '--root-dir', 'data']);
    await fake('22', '/srv/k', ['kubelet', '--config', '../k/kc.json']);
    await fake('23', '/srv/k', ['kubelet', '--config', '/etc/kubelet.yaml']);
    expect(await kubeletArgs(proc)).toEqual([
      ['kubelet', '--config=/var/lib/kubelet/config.yaml', '--root-dir', 'data'],
      ['kubelet', '--config', '/srv/k/kc.json'],
      ['kubelet', '--config', '/etc/kubelet.yaml'],
    ]);
  });

  it("kubeletVersion: what the running kubelet's executable, else the one on PATH, says it is", async () => {
    const bin = path.join(dir, 'bin');
    await fsp.mkdir(bin, { recursive: true });
    const script = async (name: string, out: string) => {
      await fsp.writeFile(path.join(bin, name), `#!/bin/sh\n[ "$1" = --version ] && echo '${out}'\n`, { mode: 0o755 });
      return path.join(bin, name);
    };
    const proc = path.join(dir, 'proc-version');
    await fsp.mkdir(path.join(proc, '31'), { recursive: true });
    await fsp.writeFile(path.join(proc, '31', 'comm'), 'kubelet\n');
    await fsp.symlink(await script('running-kubelet', 'Kubernetes v1.31.2'), path.join(proc, '31', 'exe'));
    await script('kubelet', 'Kubernetes v1.33.0-rc.1');
    expect(await kubeletVersion(proc, { PATH: bin })).toBe('v1.31.2');
    const none = path.join(dir, 'proc-none');
    await fsp.mkdir(none, { recursive: true });
    expect(await kubeletVersion(none, { PATH: bin })).toBe('v1.33.0-rc.1');
    await script('kubelet', 'no version here');
    expect(await kubeletVersion(none, { PATH: bin })).toBeUndefined();
  });

  it('which finds executables on PATH or in the sbin directories, not plain files', async () => {
    expect(which('sh', { PATH: '' })).toMatch(/\/sh$/);
    await fsp.writeFile(path.join(dir, 'notexec'), 'x', { mode: 0o644 });
    expect(which('notexec', { PATH: dir })).toBeUndefined();
    expect(which('definitely-not-a-binary-here', { PATH: dir })).toBeUndefined();
  });

  it('imagePresent is false and registryError names the failure when Docker is not there', async () => {
    expect(await probes.imagePresent('pause:1')).toBe(false);
    expect(await probes.registryError('pause:1')).toMatch(/ENOENT|connect/);
  });
});
