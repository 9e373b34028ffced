import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { buildCli, DEFAULTS, parseConfig } from '../../src/config';
import { lowestOomScoreAdj } from '../../src/docker/oom-score';
import { rfc3339ToNanos, secondsToNanos } from '../../src/cri/time';
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
    const c = parseConfig(['--network-plugin=none', '--cni-bin-dir', '/a,/b', '--cri-dockerd-root-directory', '/tmp/x', '--pod-cidr', '10.1.0.0/16']);
    expect(c).toMatchObject({ networkPlugin: 'none', cniBinDirs: ['/a', '/b'], rootDirectory: '/tmp/x', podCidr: '10.1.0.0/16', cniCacheDir: '/tmp/x/cni-cache' });
  });

  it('rejects unknown flags and bad values', () => {
    const quiet = (): ReturnType<typeof buildCli> => buildCli().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    expect(() => parseConfig(['--no-such-flag'], quiet())).toThrow(/unknown option/);
    expect(() => parseConfig(['--network-plugin', 'kubenet'], quiet())).toThrow(/network-plugin/);
    expect(() => parseConfig(['--log-level', 'loud'], quiet())).toThrow(/log-level/);
  });
});

describe('docker endpoint', () => {
  it('understands unix, tcp and DOCKER_HOST', () => {
    expect(dockerOptions({ endpoint: 'unix:///run/d.sock' })).toEqual({ socketPath: '/run/d.sock' });
    expect(dockerOptions({ endpoint: 'tcp://127.0.0.1:2375' })).toEqual({ host: '127.0.0.1', port: 2375, protocol: 'http' });
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
