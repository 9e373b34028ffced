import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import winston from 'winston';
import { parseConfFile, probeConfDir } from '../../src/network/cni-config';
import { cniArgs, cniEnv, resultIps } from '../../src/network/cni-exec';
import { createNetworkPlugin } from '../../src/network/plugin-manager';
import { pluginStdin } from '../../src/network/plugin-stdin';
import { createResultCache } from '../../src/network/result-cache';

const quiet = winston.createLogger({ silent: true });

describe('CNI config probing', () => {
  let dir: string;
  let bin: string;
  beforeEach(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-netd-'));
    bin = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-bin-'));
    for (const p of ['bridge', 'loopback', 'portmap']) await fsp.writeFile(path.join(bin, p), '', { mode: 0o755 });
  });
  afterEach(async () => {
    await fsp.rm(dir, { recursive: true, force: true });
    await fsp.rm(bin, { recursive: true, force: true });
  });
  const list = (name: string, types: string[]): string =>
    JSON.stringify({ cniVersion: '0.4.0', name, plugins: types.map((type) => ({ type })) });

  it('takes the first valid file in lexical order and skips invalid ones', async () => {
    await fsp.writeFile(path.join(dir, '05-broken.conflist'), '{ not json');
    await fsp.writeFile(
      path.join(dir, '06-noname.conflist'),
      JSON.stringify({ cniVersion: '0.4.0', plugins: [{ type: 'bridge' }] }),
    );
    await fsp.writeFile(path.join(dir, '20-second.conflist'), list('second', ['bridge']));
    await fsp.writeFile(path.join(dir, '10-first.conflist'), list('first', ['bridge', 'portmap']));
    await fsp.writeFile(path.join(dir, '00-ignored.txt'), list('txt', ['bridge']));
    const r = await probeConfDir(dir, [bin], quiet);
    expect(r.config?.name).toBe('first');
    expect(r.problem).toBeUndefined();
  });

  it('wraps a single-plugin .conf into a list', () => {
    const c = parseConfFile(
      '/x/10.conf',
      JSON.stringify({ cniVersion: '0.3.1', name: 'single', type: 'bridge', bridge: 'br0' }),
    );
    expect(c).toEqual({
      cniVersion: '0.3.1',
      name: 'single',
      plugins: [{ type: 'bridge', bridge: 'br0' }],
      file: '/x/10.conf',
    });
    expect(() =>
      parseConfFile('f', JSON.stringify({ cniVersion: '1', name: 'n', plugins: [{ type: '../evil' }] })),
    ).toThrow(/plain binary name/);
  });

  it('is not ready, naming the plugin, when a binary is missing, or when there is no config', async () => {
    expect((await probeConfDir(dir, [bin], quiet)).problem).toMatch(/no CNI configuration file/);
    expect((await probeConfDir(path.join(dir, 'nope'), [bin], quiet)).problem).toMatch(
      /no CNI configuration directory/,
    );
    await fsp.writeFile(path.join(dir, '10-x.conflist'), list('x', ['bridge', 'flannel']));
    const r = await probeConfDir(dir, [bin], quiet);
    expect(r.config?.name).toBe('x');
    expect(r.problem).toMatch(/needs plugin flannel/);
  });

  it('picks up a config added after start without a restart', async () => {
    const plugin = createNetworkPlugin({
      plugin: 'cni',
      confDir: dir,
      binDirs: [bin],
      cacheDir: path.join(dir, 'cache'),
      logger: quiet,
      probeIntervalMs: 100,
    });
    try {
      await new Promise((r) => setTimeout(r, 150));
      expect(plugin.status()).toMatchObject({ ready: false, reason: 'NetworkPluginNotReady' });
      await fsp.writeFile(path.join(dir, '10-late.conflist'), list('late', ['bridge']));
      const deadline = Date.now() + 5000;
      while (!plugin.status().ready && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(plugin.status()).toMatchObject({ ready: true, configName: 'late' });
      await fsp.rm(path.join(dir, '10-late.conflist'));
      while (plugin.status().ready && Date.now() < deadline + 5000) await new Promise((r) => setTimeout(r, 50));
      expect(plugin.status().ready).toBe(false);
    } finally {
      plugin.close();
    }
  });
});

describe('CNI invocation', () => {
  it('builds the environment and CNI_ARGS the kubelet way', () => {
    expect(cniArgs({ K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'p' })).toBe(
      'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p',
    );
    const env = cniEnv({
      command: 'ADD',
      containerId: 'abc',
      netns: '/proc/1/ns/net',
      ifName: 'eth0',
      args: {},
      binDirs: ['/a', '/b'],
      timeoutMs: 1,
    });
    expect(env).toMatchObject({
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'abc',
      CNI_NETNS: '/proc/1/ns/net',
      CNI_IFNAME: 'eth0',
      CNI_PATH: '/a:/b',
    });
  });

  it('passes port mappings only to plugins with the capability, and chains prevResult', () => {
    const conf = { cniVersion: '0.4.0', name: 'n', file: 'f', plugins: [] };
    const pm = [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' as const }];
    expect(pluginStdin(conf, { type: 'bridge' }, { portMappings: pm })).toEqual({
      type: 'bridge',
      name: 'n',
      cniVersion: '0.4.0',
    });
    expect(
      pluginStdin(
        conf,
        { type: 'portmap', capabilities: { portMappings: true } },
        { portMappings: pm, prevResult: { ips: [] } },
      ),
    ).toEqual({
      type: 'portmap',
      capabilities: { portMappings: true },
      name: 'n',
      cniVersion: '0.4.0',
      prevResult: { ips: [] },
      runtimeConfig: { portMappings: pm },
    });
    expect(
      pluginStdin(
        conf,
        { type: 'host-local', capabilities: { ipRanges: true } },
        { portMappings: [], podCidr: '10.1.0.0/24' },
      ).runtimeConfig,
    ).toEqual({
      ipRanges: [[{ subnet: '10.1.0.0/24' }]],
    });
  });

  it('reads pod IPs from results of every version, IPv4 first', () => {
    expect(resultIps({ ips: [{ address: 'fd00::5/64' }, { address: '10.88.0.5/16' }] })).toEqual([
      '10.88.0.5',
      'fd00::5',
    ]);
    expect(resultIps({ ip4: { ip: '10.1.0.2/24' } })).toEqual(['10.1.0.2']);
    expect(resultIps(undefined)).toEqual([]);
  });
});

describe('CNI result cache', () => {
  it('round-trips entries atomically and lists them', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cache-'));
    const cache = await createResultCache(dir);
    const id = 'b'.repeat(64);
    const entry = {
      sandboxId: id,
      podName: 'p',
      podNamespace: 'n',
      podUid: 'u',
      netns: '/proc/1/ns/net',
      ifName: 'eth0',
      portMappings: [],
      config: { cniVersion: '0.4.0', name: 'n', plugins: [{ type: 'bridge' }], file: 'f' },
      result: { ips: [{ address: '10.0.0.2/24' }] },
    };
    await cache.write(entry);
    expect(await cache.read(id)).toEqual(entry);
    expect(await cache.list()).toEqual([id]);
    await cache.remove(id);
    expect(await cache.read(id)).toBeUndefined();
    expect(await cache.read('../x')).toBeUndefined();
    await expect(cache.write({ ...entry, sandboxId: '../x' })).rejects.toThrow(/invalid sandbox id/);
    await fsp.rm(dir, { recursive: true });
  });
});
