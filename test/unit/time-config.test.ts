import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { buildCli, DEFAULTS, parseConfig } from '../../src/config';
import { joinCgroup, parseCgroupMounts } from '../../src/cgroups/runtime-cgroup';
import { lowestOomScoreAdj } from '../../src/docker/oom-score';
import { rfc3339ToNanos, secondsToNanos } from '../../src/time';
import { dockerOptions } from '../../src/docker/client';

describe('timestamps', () => {
  it('keeps Docker nanoseconds', () => {
    expect(rfc3339ToNanos('2026-11-22T11:10:43.123456789Z')).toBe('1795345843123456789');
    expect(rfc3339ToNanos('2026-11-22T11:10:43Z')).toBe('1795345843000000000');
    expect(rfc3339ToNanos('0001-01-01T00:00:00Z')).toBe('0');
    expect(secondsToNanos(2)).toBe('2000000000');
  });
});

describe('config', () => {
  it('has the documented defaults', () => {
    const c = parseConfig([]);
    expect(c.containerRuntimeEndpoint).toBe('unix:///run/crishim/crishim.sock');
    expect(c.cniBinDirs).toEqual(['/opt/cni/bin', '/usr/lib/cni']);
    expect(c.cniCacheDir).toBe('/var/lib/crishim/cni-cache');
    expect(c.podInfraContainerImage).toBe(DEFAULTS.podInfraContainerImage);
  });

  it('takes cri-dockerd flags, including the root directory alias', () => {
    const c = parseConfig([
      '--network-plugin=none',
      '--cni-bin-dir',
      '/a,/b',
      '--cri-dockerd-root-directory',
      '/tmp/x',
      '--pod-cidr',
      '10.1.0.0/16',
    ]);
    expect(c).toMatchObject({
      networkPlugin: 'none',
      cniBinDirs: ['/a', '/b'],
      rootDirectory: '/tmp/x',
      podCidr: '10.1.0.0/16',
      cniCacheDir: '/tmp/x/cni-cache',
    });
  });

  it('rejects unknown flags and bad values', () => {
    const quiet = (): ReturnType<typeof buildCli> =>
      buildCli().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    expect(() => parseConfig(['--no-such-flag'], quiet())).toThrow(/unknown option/);
    expect(() => parseConfig(['--network-plugin', 'kubenet'], quiet())).toThrow(/network-plugin/);
    expect(() => parseConfig(['--log-level', 'loud'], quiet())).toThrow(/log-level/);
  });
});

describe('CLI help and aliases', () => {
  const quiet = (): ReturnType<typeof buildCli> =>
    buildCli().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });

  it('shows the real defaults in --help, once per flag', () => {
    const help = buildCli().helpInformation();
    const entry = (flag: string): string => {
      // an entry runs from its flag to the next flag at the start of a line
      const m = new RegExp(`^\\s+${flag} .*?(?=^\\s+--|^\\s+-h|$(?![\\s\\S]))`, 'ms').exec(help);
      if (!m) throw new Error(`${flag} missing from --help:\n${help}`);
      return m[0].replace(/\s+/g, ' ');
    };
    expect(entry('--docker-endpoint')).toContain('(default: DOCKER_HOST, else unix:///var/run/docker.sock)');
    expect(entry('--docker-endpoint')).not.toContain('""');
    expect(entry('--cni-cache-dir').match(/default/g)).toHaveLength(1);
    expect(entry('--cni-cache-dir')).toContain('(default: <root-directory>/cni-cache)');
    expect(help).not.toContain('(default: "")');
    expect(entry('--container-runtime-endpoint')).toContain('(default: "unix:///run/crishim/crishim.sock")');
  });

  it.each([
    ['warning', 'warn'],
    ['trace', 'debug'],
    ['fatal', 'error'],
    ['panic', 'error'],
    ['info', 'info'],
  ])('accepts cri-dockerd log level %s as %s', (given, level) => {
    expect(parseConfig(['--log-level', given], quiet()).logLevel).toBe(level);
  });

  it('takes the heap trim step in whole MiB, 0 turning the trim off', () => {
    expect(parseConfig([], quiet()).heapTrimStepMiB).toBe(4);
    expect(parseConfig(['--heap-trim-step', '0'], quiet()).heapTrimStepMiB).toBe(0);
    expect(parseConfig(['--heap-trim-step', '16'], quiet()).heapTrimStepMiB).toBe(16);
    expect(() => parseConfig(['--heap-trim-step', '-1'], quiet())).toThrow(/whole number of MiB/);
    expect(() => parseConfig(['--heap-trim-step', '2.5'], quiet())).toThrow(/whole number of MiB/);
  });

  it('takes the json-file limits, refusing sizes under 1m and max-file 1 (Docker would truncate in place)', () => {
    expect(parseConfig([], quiet())).toMatchObject({ containerLogMaxSize: '10m', containerLogMaxFiles: 5 });
    expect(parseConfig(['--container-log-max-size', '50M', '--container-log-max-files', '3'], quiet())).toMatchObject({
      containerLogMaxSize: '50m',
      containerLogMaxFiles: 3,
    });
    expect(parseConfig(['--container-log-max-size', '2048k'], quiet()).containerLogMaxSize).toBe('2048k');
    expect(() => parseConfig(['--container-log-max-size', '100k'], quiet())).toThrow(/at least 1m/);
    expect(() => parseConfig(['--container-log-max-size', 'big'], quiet())).toThrow(/at least 1m/);
    expect(() => parseConfig(['--container-log-max-files', '1'], quiet())).toThrow(/at least 2/);
    const help = buildCli().helpInformation().replace(/\s+/g, ' ');
    expect(help).toContain('--container-log-max-size <size>');
    expect(help).toMatch(/--container-log-max-files <n> .*\(default: 5\)/);
  });

  it('takes an absolute --runtime-cgroups path and refuses others', () => {
    expect(parseConfig(['--runtime-cgroups=/system.slice/crishim.service']).runtimeCgroups).toBe(
      '/system.slice/crishim.service',
    );
    expect(() => parseConfig(['--runtime-cgroups=system.slice'], quiet())).toThrow(/runtime-cgroups/);
    expect(() => parseConfig(['--runtime-cgroups=/a/../../b'], quiet())).toThrow(/runtime-cgroups/);
  });
});

describe('--runtime-cgroups on a fake cgroup tree', () => {
  let root: string;
  beforeEach(async () => {
    root = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cg-'));
  });
  afterEach(() => fsp.rm(root, { recursive: true, force: true }));

  const mountsFile = async (lines: string[]): Promise<string> => {
    const f = path.join(root, 'mounts');
    await fsp.writeFile(f, lines.join('\n') + '\n');
    return f;
  };
  const read = (...p: string[]): Promise<string> => fsp.readFile(path.join(root, ...p), 'utf8');

  it('cgroup v1: writes the pid into every hierarchy, creating the path, cpuset inherited from the parent', async () => {
    for (const c of ['cpu,cpuacct', 'memory', 'cpuset', 'systemd']) await fsp.mkdir(path.join(root, c));
    await fsp.writeFile(path.join(root, 'cpuset', 'cpuset.cpus'), '0-1\n');
    await fsp.writeFile(path.join(root, 'cpuset', 'cpuset.mems'), '0\n');
    const file = await mountsFile([
      `tmpfs ${root} tmpfs rw 0 0`,
      `cgroup ${root}/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0`,
      `cgroup ${root}/memory cgroup rw,relatime,memory 0 0`,
      `cgroup ${root}/cpuset cgroup rw,relatime,cpuset 0 0`,
      `cgroup ${root}/systemd cgroup rw,relatime,name=systemd 0 0`,
      `cgroup2 ${root}/unified cgroup2 rw,relatime 0 0`,
    ]);
    const written = await joinCgroup('/system.slice/crishim.service', { pid: 4242, mountsFile: file });
    expect(written).toHaveLength(4);
    for (const c of ['cpu,cpuacct', 'memory', 'cpuset', 'systemd']) {
      expect(await read(c, 'system.slice', 'crishim.service', 'cgroup.procs')).toBe('4242\n');
    }
    // the hybrid host's unified mount is left alone
    await expect(read('unified', 'system.slice', 'crishim.service', 'cgroup.procs')).rejects.toThrow(/ENOENT/);
    expect(await read('cpuset', 'system.slice', 'cpuset.cpus')).toBe('0-1');
    expect(await read('cpuset', 'system.slice', 'crishim.service', 'cpuset.mems')).toBe('0');
  });

  it('cgroup v2: one cgroup.procs file, mount paths with escaped spaces', async () => {
    await fsp.mkdir(path.join(root, 'cg two'));
    const file = await mountsFile([`cgroup2 ${root}/cg\\040two cgroup2 rw,nsdelegate 0 0`]);
    expect(parseCgroupMounts(await fsp.readFile(file, 'utf8'))).toEqual([
      { mountPoint: `${root}/cg two`, unified: true, cpuset: false },
    ]);
    await joinCgroup('/crishim', { pid: 7, mountsFile: file });
    expect(await read('cg two', 'crishim', 'cgroup.procs')).toBe('7\n');
  });

  it('tries every hierarchy and names the ones that failed', async () => {
    await fsp.mkdir(path.join(root, 'memory'));
    // a file where a hierarchy's directory should be: mkdir fails there
    await fsp.writeFile(path.join(root, 'pids'), '');
    const file = await mountsFile([
      `cgroup ${root}/pids cgroup rw,pids 0 0`,
      `cgroup ${root}/memory cgroup rw,memory 0 0`,
    ]);
    await expect(joinCgroup('/crishim', { pid: 9, mountsFile: file })).rejects.toThrow(
      new RegExp(`cannot move into cgroup /crishim: ${root}/pids/crishim/cgroup.procs`),
    );
    expect(await read('memory', 'crishim', 'cgroup.procs')).toBe('9\n');
  });

  it('fails when no cgroup filesystem is mounted', async () => {
    const file = await mountsFile([`proc /proc proc rw 0 0`]);
    await expect(joinCgroup('/crishim', { mountsFile: file })).rejects.toThrow(/no cgroup filesystem/);
  });
});

describe('docker endpoint', () => {
  it('understands unix, tcp and DOCKER_HOST', () => {
    expect(dockerOptions({ endpoint: 'unix:///run/d.sock' })).toEqual({ socketPath: '/run/d.sock' });
    expect(dockerOptions({ endpoint: 'tcp://127.0.0.1:2375' })).toEqual({
      host: '127.0.0.1',
      port: 2375,
      protocol: 'http',
    });
    expect(dockerOptions({ env: { DOCKER_HOST: 'tcp://127.0.0.1:2999' } })).toMatchObject({ port: 2999 });
    expect(dockerOptions({ env: {} })).toEqual({ socketPath: '/var/run/docker.sock' });
    expect(() => dockerOptions({ endpoint: 'ftp://x' })).toThrow(/unsupported docker endpoint/);
  });
});

describe('oom_score_adj probe', () => {
  it('finds the lowest value a (simulated) file accepts and restores it', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-oom-'));
    const file = path.join(dir, 'oom_score_adj');
    await fsp.writeFile(file, '0');
    // a regular file accepts anything: the wanted value comes back
    expect(await lowestOomScoreAdj(-998, file)).toBe(-998);
    expect((await fsp.readFile(file, 'utf8')).trim()).toBe('0');
    await fsp.rm(dir, { recursive: true });
  });

  it('on this host, returns a value the kernel accepts', async () => {
    const v = await lowestOomScoreAdj(-998);
    expect(v).toBeGreaterThanOrEqual(-998);
    expect(v).toBeLessThanOrEqual(1000);
  });
});
