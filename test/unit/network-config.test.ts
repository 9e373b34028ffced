/** CNI conf dir probing and live reload, against temp dirs and empty stand-in binaries. */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import winston from 'winston';
import { findPlugin, parseConfFile, probeConfDirSync } from '../../src/network/cni-config';
import { createNetworkPlugin } from '../../src/network/plugin-manager';
import type { NetworkPlugin } from '../../src/network/types';

/** A logger whose lines (JSON objects) the test can read. */
function capturingLogger(): { logger: winston.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => {
    for (const l of c.toString('utf8').split('\n').filter(Boolean))
      lines.push(JSON.parse(l) as Record<string, unknown>);
  });
  return {
    logger: winston.createLogger({
      level: 'debug',
      format: winston.format.json(),
      transports: [new winston.transports.Stream({ stream })],
    }),
    lines,
  };
}

const list = (name: string, types: string[]): string =>
  JSON.stringify({ cniVersion: '0.4.0', name, plugins: types.map((type) => ({ type })) });

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

let dir: string;
let bin: string;
const quiet = winston.createLogger({ silent: true });

beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-netconf-'));
  bin = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-netbin-'));
  for (const p of ['bridge', 'loopback', 'portmap'])
    await fsp.writeFile(path.join(bin, p), '#!/bin/sh\n', { mode: 0o755 });
});
afterEach(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
  await fsp.rm(bin, { recursive: true, force: true });
});

describe('parseConfFile', () => {
  it('keeps a conflist as it is and wraps a single-plugin config', () => {
    const l = parseConfFile(
      '/d/10.conflist',
      JSON.stringify({ cniVersion: '1.0.0', name: 'n', plugins: [{ type: 'bridge', x: 1 }, { type: 'portmap' }] }),
    );
    expect(l).toEqual({
      cniVersion: '1.0.0',
      name: 'n',
      plugins: [{ type: 'bridge', x: 1 }, { type: 'portmap' }],
      file: '/d/10.conflist',
    });
    const single = parseConfFile(
      '/d/10.json',
      JSON.stringify({ cniVersion: '0.3.1', name: 's', type: 'bridge', ipam: { type: 'host-local' } }),
    );
    expect(single.plugins).toEqual([{ type: 'bridge', ipam: { type: 'host-local' } }]);
    expect(single.name).toBe('s');
  });

  it.each([
    ['[]', /not a JSON object/],
    ['{"cniVersion":"0.4.0","plugins":[{"type":"bridge"}]}', /missing "name"/],
    ['{"name":"n","plugins":[{"type":"bridge"}]}', /missing "cniVersion"/],
    ['{"name":"n","cniVersion":"0.4.0"}', /neither "plugins" nor "type"/],
    ['{"name":"n","cniVersion":"0.4.0","plugins":[]}', /non-empty/],
    ['{"name":"n","cniVersion":"0.4.0","plugins":[{"type":"bridge"},{"mtu":1}]}', /plugins\[1\] has no "type"/],
    ['{"name":"n","cniVersion":"0.4.0","plugins":[{"type":"../../bin/sh"}]}', /plain binary name/],
  ])('rejects %s', (text, why) => {
    expect(() => parseConfFile('f', text)).toThrow(why);
  });
});

describe('probing a conf dir', () => {
  it('takes the first valid .conf/.conflist/.json in lexical order, skipping invalid files and other extensions', async () => {
    await fsp.writeFile(path.join(dir, '00-other.yaml'), list('yaml', ['bridge']));
    await fsp.writeFile(path.join(dir, '01-broken.conf'), '{ nope');
    await fsp.writeFile(
      path.join(dir, '02-noname.conflist'),
      JSON.stringify({ cniVersion: '0.4.0', plugins: [{ type: 'bridge' }] }),
    );
    await fsp.writeFile(path.join(dir, '30-later.conflist'), list('later', ['bridge']));
    await fsp.writeFile(
      path.join(dir, '20-single.json'),
      JSON.stringify({ cniVersion: '0.4.0', name: 'single', type: 'bridge' }),
    );
    await fsp.mkdir(path.join(dir, '03-dir.conf'));
    const { logger, lines } = capturingLogger();
    const r = probeConfDirSync(dir, [bin], logger);
    expect(r.problem).toBeUndefined();
    expect(r.config).toMatchObject({
      name: 'single',
      file: path.join(dir, '20-single.json'),
      plugins: [{ type: 'bridge' }],
    });
    const skipped = lines.filter((l) => l.message === 'skipping invalid CNI config').map((l) => l.file);
    expect(skipped).toEqual([path.join(dir, '01-broken.conf'), path.join(dir, '02-noname.conflist')]);
  });

  it('logs an invalid file once, and again only when its content changes', async () => {
    const { logger, lines } = capturingLogger();
    const seen = new Map<string, string>();
    await fsp.writeFile(path.join(dir, '10-bad.conflist'), '{');
    probeConfDirSync(dir, [bin], logger, seen);
    probeConfDirSync(dir, [bin], logger, seen);
    expect(lines.filter((l) => l.message === 'skipping invalid CNI config')).toHaveLength(1);
    await fsp.writeFile(path.join(dir, '10-bad.conflist'), '{"name":"x"}');
    const r = probeConfDirSync(dir, [bin], logger, seen);
    expect(lines.filter((l) => l.message === 'skipping invalid CNI config')).toHaveLength(2);
    expect(r.problem).toMatch(/no valid CNI configuration file in .*10-bad\.conflist: missing "cniVersion"/);
  });

  it('says what is missing: the directory, any config, or a plugin binary (named, with the dirs searched)', async () => {
    expect(probeConfDirSync(path.join(dir, 'absent'), [bin], quiet).problem).toBe(
      `no CNI configuration directory ${path.join(dir, 'absent')}`,
    );
    expect(probeConfDirSync(dir, [bin], quiet).problem).toBe(`no CNI configuration file in ${dir}`);
    await fsp.writeFile(path.join(dir, '10-x.conflist'), list('x', ['bridge', 'flannel', 'portmap']));
    const r = probeConfDirSync(dir, ['/nonexistent', bin], quiet);
    expect(r.config?.name).toBe('x');
    expect(r.problem).toBe(
      `CNI config ${path.join(dir, '10-x.conflist')} (network x) needs plugin flannel: binary not found in /nonexistent:${bin}`,
    );
  });

  it('needs loopback too, since crishim runs it on lo, and an executable file for each plugin', async () => {
    await fsp.writeFile(path.join(dir, '10-x.conflist'), list('x', ['bridge']));
    await fsp.rm(path.join(bin, 'loopback'));
    expect(probeConfDirSync(dir, [bin], quiet).problem).toMatch(/needs plugin loopback:/);
    await fsp.writeFile(path.join(bin, 'loopback'), '', { mode: 0o644 });
    expect(findPlugin('loopback', [bin])).toBeUndefined();
    await fsp.chmod(path.join(bin, 'loopback'), 0o755);
    expect(findPlugin('loopback', [bin])).toBe(path.join(bin, 'loopback'));
    expect(probeConfDirSync(dir, [bin], quiet).problem).toBeUndefined();
  });
});

describe('plugin manager readiness', () => {
  let plugin: NetworkPlugin | undefined;
  afterEach(() => plugin?.close());
  const make = (probeIntervalMs = 60_000): NetworkPlugin =>
    (plugin = createNetworkPlugin({
      plugin: 'cni',
      confDir: dir,
      binDirs: [bin],
      cacheDir: path.join(dir, 'cache'),
      logger: quiet,
      probeIntervalMs,
    }));

  it('is right from the start, without waiting for a probe', async () => {
    await fsp.writeFile(path.join(dir, '10-a.conflist'), list('a', ['bridge']));
    expect(make().status()).toEqual({
      ready: true,
      reason: '',
      message: '',
      configName: 'a',
      configFile: path.join(dir, '10-a.conflist'),
    });
  });

  it('flips with configs added, changed and removed after start (fs.watch, no periodic probe needed)', async () => {
    const p = make(); // the periodic probe is a minute away: only the watcher can see these changes
    expect(p.status()).toEqual({
      ready: false,
      reason: 'NetworkPluginNotReady',
      message: `network plugin is not ready: no CNI configuration file in ${dir}`,
    });
    await fsp.writeFile(path.join(dir, '20-late.conflist'), list('late', ['bridge']));
    await until(() => p.status().ready);
    expect(p.status().configName).toBe('late');
    // a lexically earlier file takes over
    await fsp.writeFile(path.join(dir, '10-early.conflist'), list('early', ['bridge', 'portmap']));
    await until(() => p.status().configName === 'early');
    // changed in place to need a missing binary
    await fsp.writeFile(path.join(dir, '10-early.conflist'), list('early', ['bridge', 'weave']));
    await until(() => !p.status().ready);
    expect(p.status().message).toMatch(/needs plugin weave: binary not found in/);
    await fsp.rm(path.join(dir, '10-early.conflist'));
    await until(() => p.status().configName === 'late' && p.status().ready);
    await fsp.rm(path.join(dir, '20-late.conflist'));
    await until(() => !p.status().ready);
    expect(p.status().reason).toBe('NetworkPluginNotReady');
  });

  it('finds a conf dir created after start with the periodic probe, and a binary installed later', async () => {
    const confDir = path.join(dir, 'net.d');
    plugin = createNetworkPlugin({
      plugin: 'cni',
      confDir,
      binDirs: [bin],
      cacheDir: path.join(dir, 'cache'),
      logger: quiet,
      probeIntervalMs: 50,
    });
    const p = plugin;
    expect(p.status().message).toMatch(/no CNI configuration directory/);
    await fsp.mkdir(confDir);
    await fsp.writeFile(path.join(confDir, '10-a.conflist'), list('a', ['bridge', 'calico']));
    await until(() => /calico/.test(p.status().message));
    expect(p.status().ready).toBe(false);
    await fsp.writeFile(path.join(bin, 'calico'), '#!/bin/sh\n', { mode: 0o755 });
    await until(() => p.status().ready);
  });

  it('setUpPod on a not-ready network rejects naming the pod and what is missing, and runs nothing', async () => {
    await fsp.writeFile(path.join(dir, '10-x.conflist'), list('x', ['bridge', 'flannel']));
    const p = make();
    await expect(
      p.setUpPod({
        podName: 'web',
        podNamespace: 'prod',
        podUid: 'u',
        sandboxId: 'a'.repeat(64),
        netnsPath: '/proc/1/ns/net',
        portMappings: [],
      }),
    ).rejects.toThrow(/set up network of pod prod\/web: network plugin is not ready: .*needs plugin flannel/);
    expect(await p.cachedSandboxes()).toEqual([]);
  });

  it('the none plugin is always ready and does nothing', async () => {
    const p = createNetworkPlugin({
      plugin: 'none',
      confDir: path.join(dir, 'absent'),
      binDirs: [],
      cacheDir: path.join(dir, 'cache'),
      logger: quiet,
    });
    expect(p.status().ready).toBe(true);
    const req = {
      podName: 'p',
      podNamespace: 'n',
      podUid: 'u',
      sandboxId: 'a'.repeat(64),
      netnsPath: '',
      portMappings: [],
    };
    await expect(p.setUpPod(req)).resolves.toEqual({ ips: [], networkName: 'none' });
    await expect(p.tearDownPod(req)).resolves.toBeUndefined();
    await expect(p.podNetwork(req.sandboxId)).resolves.toBeUndefined();
    await expect(fsp.stat(path.join(dir, 'cache'))).rejects.toThrow(/ENOENT/);
    p.close();
  });
});
