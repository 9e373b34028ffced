/**
 * The CNI plugin manager against the real plugins in /usr/lib/cni (root, no
 * dockerd needed): a named netns stands in for the pause container. Bridge,
 * subnet (10.88.250.0/24), host-local dataDir and cache dir are private to this
 * file; traffic goes only to the pod IPs set up here.
 */
import { execFileSync } from 'child_process';
import { randomBytes } from 'crypto';
import { promises as fsp, readFileSync, readdirSync, writeFileSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import winston from 'winston';
import { createNetworkPlugin } from '../../src/network/plugin-manager';
import type { NetworkPlugin, PodNetworkRequest } from '../../src/network/types';

jest.setTimeout(60_000);

const SYSTEM_BIN = '/usr/lib/cni';
const SUBNET_PREFIX = '10.88.250.';
const rand = randomBytes(3).toString('hex');
const bridge = `cst${rand}`;
const network = `crishim-e2e-${rand}`;
const logger = winston.createLogger({ silent: true });

let dir: string;
let confDir: string;
let cacheDir: string;
let ipamDir: string;
let fakeBin: string;
const namespaces: string[] = [];
const plugins: NetworkPlugin[] = [];

const sh = (cmd: string, args: string[]): string =>
  execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const newId = (): string => randomBytes(32).toString('hex');

function addNetns(): string {
  const ns = `crishim-test-${rand}-${namespaces.length}`;
  sh('ip', ['netns', 'add', ns]);
  namespaces.push(ns);
  return ns;
}

/** The shipped config, on this file's bridge, subnet and reservation dir; extra plugins appended. */
function writeConfig(extra: Array<Record<string, unknown>> = []): void {
  const shipped = JSON.parse(readFileSync(path.join(__dirname, '../../cni/10-crishim.conflist'), 'utf8')) as {
    plugins: Array<Record<string, unknown> & { type: string; ipam?: Record<string, unknown> }>;
  } & Record<string, unknown>;
  const bridgePlugin = shipped.plugins.find((p) => p.type === 'bridge');
  if (!bridgePlugin?.ipam) throw new Error('the shipped config has no bridge with ipam');
  bridgePlugin.bridge = bridge;
  bridgePlugin.ipam = { ...bridgePlugin.ipam, ranges: [[{ subnet: `${SUBNET_PREFIX}0/24` }]], dataDir: ipamDir };
  const conf = { ...shipped, name: network, plugins: [...shipped.plugins, ...extra] };
  writeFileSync(path.join(confDir, '10-crishim.conflist'), JSON.stringify(conf));
}

function make(execTimeoutMs?: number): NetworkPlugin {
  const p = createNetworkPlugin({
    plugin: 'cni',
    confDir,
    binDirs: [fakeBin, SYSTEM_BIN],
    cacheDir,
    logger,
    execTimeoutMs,
    probeIntervalMs: 60_000,
  });
  plugins.push(p);
  return p;
}

const request = (sandboxId: string, ns: string, over: Partial<PodNetworkRequest> = {}): PodNetworkRequest => ({
  podName: `pod-${sandboxId.slice(0, 6)}`,
  podNamespace: 'e2e',
  podUid: `uid-${sandboxId.slice(0, 6)}`,
  sandboxId,
  netnsPath: `/var/run/netns/${ns}`,
  portMappings: [],
  ...over,
});

/** IPs host-local has reserved for this file's network. */
function reserved(): string[] {
  try {
    return readdirSync(path.join(ipamDir, network)).filter((f) => f.startsWith(SUBNET_PREFIX));
  } catch {
    return [];
  }
}
const cached = (): string[] => readdirSync(cacheDir).filter((f) => f.endsWith('.json'));
const natRules = (): string => sh('iptables', ['-t', 'nat', '-S']);

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('the CNI e2e test needs root');
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cni-e2e-'));
  confDir = path.join(dir, 'net.d');
  cacheDir = path.join(dir, 'cache');
  ipamDir = path.join(dir, 'ipam');
  fakeBin = path.join(dir, 'bin');
  for (const d of [confDir, cacheDir, ipamDir, fakeBin]) await fsp.mkdir(d);
  // chained after bridge: fail or hang on ADD, succeed on DEL
  await fsp.writeFile(
    path.join(fakeBin, 'crishim-fail'),
    '#!/bin/sh\ncat >/dev/null\n[ "$CNI_COMMAND" = ADD ] || exit 0\necho \'{"cniVersion":"0.4.0","code":999,"msg":"injected failure","details":"for the e2e test"}\'\nexit 1\n',
    { mode: 0o755 },
  );
  await fsp.writeFile(
    path.join(fakeBin, 'crishim-hang'),
    '#!/bin/sh\ncat >/dev/null\n[ "$CNI_COMMAND" = ADD ] || exit 0\nsleep 600 &\necho $! > "$(dirname "$0")/hang.pid"\nwait\n',
    { mode: 0o755 },
  );
});

afterAll(async () => {
  for (const p of plugins) p.close();
  for (const ns of namespaces) {
    try {
      sh('ip', ['netns', 'del', ns]);
    } catch {
      /* deleted by a test */
    }
  }
  try {
    sh('ip', ['link', 'del', bridge]);
  } catch {
    /* never created */
  }
  await fsp.rm(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await fsp.rm(path.join(confDir, '10-crishim.conflist'), { force: true });
});

it('sets a pod up on the shipped config (lo, eth0, reachable IP, port mapping) and tears it down completely', async () => {
  writeConfig();
  const p = make();
  expect(p.status()).toMatchObject({ ready: true, configName: network });
  const ns = addNetns();
  const id = newId();
  const hostPort = 30000 + (parseInt(rand, 16) % 20000);
  const r = await p.setUpPod(request(id, ns, { portMappings: [{ hostPort, containerPort: 80, protocol: 'tcp' }] }));
  expect(r.networkName).toBe(network);
  expect(r.ips).toHaveLength(1);
  const ip = r.ips[0];
  expect(ip.startsWith(SUBNET_PREFIX)).toBe(true);

  expect(sh('ip', ['-n', ns, '-4', 'addr', 'show', 'dev', 'eth0'])).toContain(`inet ${ip}/24`);
  expect(sh('ip', ['-n', ns, 'addr', 'show', 'dev', 'lo'])).toMatch(
    /<LOOPBACK,UP,LOWER_UP>[\s\S]*inet 127\.0\.0\.1\/8/,
  );
  expect(sh('ip', ['-n', ns, 'route', 'show', 'default'])).toContain(`default via ${SUBNET_PREFIX}1 dev eth0`);
  sh('ping', ['-c1', '-W2', ip]); // throws when unanswered
  expect(reserved()).toEqual([ip]);
  expect(cached()).toEqual([`${id}.json`]);
  expect(await p.podNetwork(id)).toEqual({ ips: [ip], networkName: network });
  expect(natRules()).toMatch(new RegExp(`--dport ${hostPort} .*--to-destination ${ip.replace(/\./g, '\\.')}:80`));
  expect(natRules()).toContain(`id: \\"${id}\\"`); // bridge's ipMasq chain for this container

  await p.tearDownPod(request(id, ns));
  expect(reserved()).toEqual([]);
  expect(cached()).toEqual([]);
  expect(natRules()).not.toContain(`--dport ${hostPort} `);
  expect(natRules()).not.toContain(id);
  expect(sh('ip', ['-n', ns, 'link', 'show'])).not.toContain('eth0');
  expect(() => sh('ping', ['-c1', '-W1', ip])).toThrow();
  // idempotent
  await p.tearDownPod(request(id, ns));
  expect(cached()).toEqual([]);
});

it("lets two pods on the shipped config reach each other under Docker's FORWARD DROP, and forgets them after", async () => {
  // Docker sets FORWARD to DROP and loads br_netfilter: bridged pod-to-pod packets meet that policy
  expect(sh('iptables', ['-S', 'FORWARD'])).toContain('-P FORWARD DROP');
  expect(readFileSync('/proc/sys/net/bridge/bridge-nf-call-iptables', 'utf8').trim()).toBe('1');
  writeConfig();
  const p = make();
  const [a, b] = [addNetns(), addNetns()];
  const [idA, idB] = [newId(), newId()];
  const ipA = (await p.setUpPod(request(idA, a))).ips[0];
  const ipB = (await p.setUpPod(request(idB, b))).ips[0];
  sh('ip', ['netns', 'exec', a, 'ping', '-c1', '-W2', ipB]); // throws when dropped
  sh('ip', ['netns', 'exec', b, 'ping', '-c1', '-W2', ipA]);
  await p.tearDownPod(request(idA, a));
  await p.tearDownPod(request(idB, b));
  const filter = sh('iptables', ['-S']);
  expect(filter).not.toContain(`${ipA}/32`);
  expect(filter).not.toContain(`${ipB}/32`);
});

it('tears down from the cache after a restart, with the config gone and the netns deleted', async () => {
  writeConfig();
  const before = make();
  const ns = addNetns();
  const id = newId();
  const { ips } = await before.setUpPod(request(id, ns));
  expect(reserved()).toEqual(ips);
  before.close();
  sh('ip', ['netns', 'del', ns]);
  await fsp.rm(path.join(confDir, '10-crishim.conflist'));

  const after = make();
  expect(after.status()).toMatchObject({ ready: false, reason: 'NetworkPluginNotReady' });
  expect(await after.cachedSandboxes()).toEqual([id]);
  // what recovery passes: no pod names, no netns
  await after.tearDownPod({
    podName: '',
    podNamespace: '',
    podUid: '',
    sandboxId: id,
    netnsPath: '',
    portMappings: [],
  });
  expect(reserved()).toEqual([]);
  expect(await after.cachedSandboxes()).toEqual([]);
  expect(natRules()).not.toContain(id);
});

it('a config naming a missing plugin is not ready, and setUpPod fails naming it with no IP reserved', async () => {
  writeConfig([{ type: 'crishim-no-such-plugin' }]);
  const p = make();
  expect(p.status()).toMatchObject({ ready: false, reason: 'NetworkPluginNotReady' });
  expect(p.status().message).toContain(
    `needs plugin crishim-no-such-plugin: binary not found in ${fakeBin}:${SYSTEM_BIN}`,
  );
  const ns = addNetns();
  const id = newId();
  await expect(p.setUpPod(request(id, ns))).rejects.toThrow(
    /set up network of pod e2e\/pod-\w+: network plugin is not ready: .*crishim-no-such-plugin/,
  );
  expect(reserved()).toEqual([]);
  expect(cached()).toEqual([]);
});

it('a plugin failing after bridge: its message comes back and the bridge IP is released', async () => {
  writeConfig([{ type: 'crishim-fail' }]);
  const p = make();
  const ns = addNetns();
  const id = newId();
  await expect(p.setUpPod(request(id, ns))).rejects.toThrow(
    new RegExp(
      `set up network of pod e2e/pod-\\w+ \\(network ${network}\\): CNI plugin crishim-fail ADD failed: injected failure: for the e2e test`,
    ),
  );
  expect(reserved()).toEqual([]);
  expect(cached()).toEqual([]);
  expect(sh('ip', ['-n', ns, 'link', 'show'])).not.toContain('eth0');
});

it('a hanging plugin is killed at the timeout and the bridge IP is released', async () => {
  writeConfig([{ type: 'crishim-hang' }]);
  const p = make(2000);
  const ns = addNetns();
  const id = newId();
  const t0 = Date.now();
  await expect(p.setUpPod(request(id, ns))).rejects.toThrow(
    /CNI plugin crishim-hang ADD failed: timed out after 2000 ms/,
  );
  expect(Date.now() - t0).toBeLessThan(15_000);
  expect(reserved()).toEqual([]);
  expect(cached()).toEqual([]);
  // nothing of the plugin keeps running, not even what it started (zombies awaiting a reaper do not count)
  const sleeper = readFileSync(path.join(fakeBin, 'hang.pid'), 'utf8').trim();
  const running = readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        if (/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false;
        return (
          pid === sleeper || readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(path.join(fakeBin, 'crishim-hang'))
        );
      } catch {
        return false;
      }
    });
  expect(running).toEqual([]);
});
