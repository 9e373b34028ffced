/**
 * CNI invocation through the plugin manager with fake plugins (node scripts)
 * that record their environment and stdin: what each plugin gets, chaining,
 * DEL order, errors, undo of a failed ADD, timeouts, cancellation, and DEL from
 * the cache after a restart.
 */
import { existsSync, promises as fsp, readdirSync, readFileSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PassThrough } from 'stream';
import winston from 'winston';
import { cniArgs, cniEnv, execPlugin, pluginFailure, resultIps } from '../../src/network/cni-exec';
import {
  directLauncher,
  MAX_OUTPUT,
  pluginLauncher,
  ShellLauncher,
  type PluginLauncher,
} from '../../src/network/cni-launch';
import { createNetworkPlugin } from '../../src/network/plugin-manager';
import { pluginStdin } from '../../src/network/plugin-stdin';
import type { NetworkPlugin, PodNetworkRequest } from '../../src/network/types';

const quiet = winston.createLogger({ silent: true });

/** Records each call (its whole environment, its stdin) to calls.jsonl beside itself; behaviour picked by its file name. */
const FAKE = `#!/usr/bin/env node
const fs = require('fs');
const path = require('path');
const me = path.basename(process.argv[1]);
const stdin = fs.readFileSync(0, 'utf8');
const env = { ...process.env };
fs.appendFileSync(path.join(__dirname, 'calls.jsonl'), JSON.stringify({ plugin: me, env, stdin: JSON.parse(stdin) }) + '\\n');
const conf = JSON.parse(stdin);
const cmd = process.env.CNI_COMMAND;
if (me === 'fake-fail' && cmd === 'ADD') {
  process.stdout.write(JSON.stringify({ cniVersion: conf.cniVersion, code: 7, msg: 'no more addresses', details: 'range 10.1.2.0/24 is full' }));
  process.exit(1);
}
if (me === 'fake-stderr' && cmd === 'ADD') { process.stderr.write('panic: something odd\\n'); process.exit(2); }
if (me === 'fake-delfail' && cmd === 'DEL') { process.stdout.write(JSON.stringify({ code: 11, msg: 'cannot delete' })); process.exit(1); }
if (cmd !== 'ADD') process.exit(0);
if (me === 'fake-ip') {
  process.stdout.write(JSON.stringify({ cniVersion: conf.cniVersion, interfaces: [{ name: 'eth0' }], ips: [{ version: '6', address: 'fd00::5/64' }, { version: '4', address: '10.1.2.3/24', gateway: '10.1.2.1' }] }));
} else if (me === 'loopback') {
  process.stdout.write(JSON.stringify({ cniVersion: conf.cniVersion, ips: [{ version: '4', address: '127.0.0.1/8' }] }));
} else {
  process.stdout.write(JSON.stringify({ ...conf.prevResult, touchedBy: (conf.prevResult.touchedBy || []).concat(me) }));
}
`;
/** Hangs with a child of its own, whose pid it leaves beside itself. */
const HANG = `#!/bin/sh
cat >/dev/null
sleep 300 &
echo $! > "$(dirname "$0")/hang.pid"
wait
`;

interface Call {
  plugin: string;
  env: Record<string, string>;
  stdin: Record<string, unknown>;
}

let dir: string;
let bin: string;
let confDir: string;
let cacheDir: string;
let plugin: NetworkPlugin | undefined;
const ID = 'c0ffee'.padEnd(64, '0');

const calls = (): Call[] => {
  try {
    return readFileSync(path.join(bin, 'calls.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Call);
  } catch {
    return [];
  }
};
/** The calls in order, except that lo's DELs, which run beside the chain's, are listed last. */
const summary = (): string[] => {
  const all = calls().map((c) => `${c.env.CNI_COMMAND} ${c.plugin} ${c.env.CNI_IFNAME}`);
  const loDel = all.filter((c) => c === 'DEL loopback lo');
  return [...all.filter((c) => c !== 'DEL loopback lo'), ...loDel];
};
const clearCalls = (): Promise<void> => fsp.rm(path.join(bin, 'calls.jsonl'), { force: true });

async function useConfig(types: Array<string | Record<string, unknown>>, name = 'testnet'): Promise<void> {
  const plugins = types.map((t) => (typeof t === 'string' ? { type: t } : t));
  await fsp.writeFile(path.join(confDir, '10-test.conflist'), JSON.stringify({ cniVersion: '0.4.0', name, plugins }));
}
const make = (execTimeoutMs?: number): NetworkPlugin =>
  (plugin = createNetworkPlugin({
    plugin: 'cni',
    confDir,
    binDirs: ['/nonexistent-first', bin],
    cacheDir,
    // the daemon's way: plugins started by the shell launcher
    execDir: path.join(dir, 'exec'),
    logger: quiet,
    execTimeoutMs,
    probeIntervalMs: 60_000,
  }));
const req = (over: Partial<PodNetworkRequest> = {}): PodNetworkRequest => ({
  podName: 'web',
  podNamespace: 'prod',
  podUid: 'uid-1',
  sandboxId: ID,
  netnsPath: '/proc/self/ns/net',
  portMappings: [
    { hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '' },
    { hostPort: 0, containerPort: 81, protocol: 'tcp' },
    { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' },
  ],
  ...over,
});

beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-netexec-'));
  bin = path.join(dir, 'bin');
  confDir = path.join(dir, 'net.d');
  cacheDir = path.join(dir, 'cache');
  await fsp.mkdir(bin);
  await fsp.mkdir(confDir);
  for (const p of ['loopback', 'fake-ip', 'fake-pass', 'fake-fail', 'fake-stderr', 'fake-delfail'])
    await fsp.writeFile(path.join(bin, p), FAKE, { mode: 0o755 });
  await fsp.writeFile(path.join(bin, 'fake-hang'), HANG, { mode: 0o755 });
});
afterEach(async () => {
  plugin?.close();
  plugin = undefined;
  await fsp.rm(dir, { recursive: true, force: true });
});

describe('building a plugin call', () => {
  it('CNI_ARGS and the environment are the kubelet ones, with nothing else leaking in', () => {
    expect(cniArgs({ K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'p' })).toBe(
      'IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p',
    );
    process.env.CRISHIM_SECRET_TEST = 'x';
    const env = cniEnv({
      command: 'DEL',
      containerId: 'abc',
      netns: '',
      ifName: 'eth0',
      args: { A: 'b' },
      binDirs: ['/a', '/b'],
      timeoutMs: 1,
    });
    delete process.env.CRISHIM_SECRET_TEST;
    expect(env).toEqual({
      PATH: process.env.PATH,
      CNI_COMMAND: 'DEL',
      CNI_CONTAINERID: 'abc',
      CNI_NETNS: '',
      CNI_IFNAME: 'eth0',
      CNI_ARGS: 'IgnoreUnknown=1;A=b',
      CNI_PATH: '/a:/b',
    });
  });

  it('stdin: name/cniVersion from the list, portMappings (CNI form) only with the capability, ipRanges only with its own', () => {
    const list = { cniVersion: '0.4.0', name: 'n', file: 'f', plugins: [] };
    const pm = req().portMappings;
    const cniPm = [
      { hostPort: 8080, containerPort: 80, protocol: 'tcp' },
      { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' },
    ];
    expect(
      pluginStdin(
        list,
        { type: 'bridge', capabilities: { ipRanges: false } },
        { portMappings: pm, podCidr: '10.0.0.0/16' },
      ),
    ).toEqual({
      type: 'bridge',
      capabilities: { ipRanges: false },
      name: 'n',
      cniVersion: '0.4.0',
    });
    expect(
      pluginStdin(
        list,
        { type: 'portmap', capabilities: { portMappings: true } },
        { portMappings: pm, prevResult: { ips: [] } },
      ),
    ).toEqual({
      type: 'portmap',
      capabilities: { portMappings: true },
      name: 'n',
      cniVersion: '0.4.0',
      prevResult: { ips: [] },
      runtimeConfig: { portMappings: cniPm },
    });
    expect(
      pluginStdin(list, { type: 'portmap', capabilities: { portMappings: true } }, { portMappings: [] }).runtimeConfig,
    ).toBeUndefined();
    expect(
      pluginStdin(
        list,
        { type: 'host-local', capabilities: { ipRanges: true } },
        { portMappings: [], podCidr: '10.1.0.0/24,fd00::/64' },
      ).runtimeConfig,
    ).toEqual({
      ipRanges: [[{ subnet: '10.1.0.0/24' }], [{ subnet: 'fd00::/64' }]],
    });
  });

  it('result IPs: prefix stripped, IPv4 first, old 0.2.0 results too, junk ignored', () => {
    expect(
      resultIps({ ips: [{ address: 'fd00::5/64' }, { address: '10.88.0.5/16' }, { address: '10.99.0.5/16' }] }),
    ).toEqual(['10.88.0.5', '10.99.0.5', 'fd00::5']);
    expect(resultIps({ ip4: { ip: '10.1.0.2/24' }, ip6: { ip: 'fd00::2/64' } })).toEqual(['10.1.0.2', 'fd00::2']);
    expect(resultIps({ ips: [null, { address: 7 }, {}] })).toEqual([]);
    expect(resultIps('nope')).toEqual([]);
  });

  it('a plugin error: the spec JSON (msg: details) first, else stderr, else the exit status', () => {
    expect(pluginFailure('{"code":7,"msg":"full","details":"10.0.0.0/24"}', 'ignored', 'exit code 1')).toEqual({
      code: 7,
      msg: 'full: 10.0.0.0/24',
    });
    expect(pluginFailure('garbage', 'panic: x\n', 'exit code 2')).toEqual({ msg: 'panic: x' });
    expect(pluginFailure('', '', 'exit code 2')).toEqual({ msg: 'exit code 2' });
  });
});

describe('set up and tear down through the chain', () => {
  it('runs loopback on lo, then the chain on eth0 with prevResult, and reports IPv4 first', async () => {
    await useConfig(['fake-ip', 'fake-pass', { type: 'fake-pass', capabilities: { portMappings: true } }]);
    const p = make();
    const r = await p.setUpPod(req());
    expect(r).toEqual({ ips: ['10.1.2.3', 'fd00::5'], networkName: 'testnet' });
    expect(summary()).toEqual(['ADD loopback lo', 'ADD fake-ip eth0', 'ADD fake-pass eth0', 'ADD fake-pass eth0']);
    const [, first, second, third] = calls();
    expect(first.env).toEqual({
      PATH: process.env.PATH,
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: ID,
      CNI_NETNS: '/proc/self/ns/net',
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=${ID};K8S_POD_UID=uid-1`,
      CNI_PATH: `/nonexistent-first:${bin}`,
    });
    expect(first.stdin).toEqual({ type: 'fake-ip', name: 'testnet', cniVersion: '0.4.0' });
    expect(second.stdin.prevResult).toMatchObject({ ips: [{ address: 'fd00::5/64' }, { address: '10.1.2.3/24' }] });
    expect(second.stdin.runtimeConfig).toBeUndefined();
    expect(third.stdin.prevResult).toMatchObject({ touchedBy: ['fake-pass'] });
    expect(third.stdin.runtimeConfig).toEqual({
      portMappings: [
        { hostPort: 8080, containerPort: 80, protocol: 'tcp' },
        { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' },
      ],
    });
    expect(await p.podNetwork(ID)).toEqual({ ips: ['10.1.2.3', 'fd00::5'], networkName: 'testnet' });
    expect(await p.cachedSandboxes()).toEqual([ID]);

    await clearCalls();
    await p.tearDownPod(req({ portMappings: [] }));
    expect(summary()).toEqual(['DEL fake-pass eth0', 'DEL fake-pass eth0', 'DEL fake-ip eth0', 'DEL loopback lo']);
    // DEL gets the final ADD result and the port mappings ADD had, not the (empty) ones of this request
    const firstDel = calls().filter((c) => c.plugin !== 'loopback')[0];
    expect(firstDel.stdin.prevResult).toMatchObject({ touchedBy: ['fake-pass', 'fake-pass'] });
    expect(firstDel.stdin.runtimeConfig).toMatchObject({ portMappings: [{ hostPort: 8080 }, { hostPort: 5353 }] });
    expect(await p.cachedSandboxes()).toEqual([]);
    expect(await p.podNetwork(ID)).toBeUndefined();

    // idempotent: a second teardown runs nothing and succeeds
    await clearCalls();
    await p.tearDownPod(req());
    expect(summary()).toEqual([]);
  });

  it('a failing plugin: DEL undoes the chain, the error names the pod, the plugin and its message', async () => {
    await useConfig(['fake-ip', 'fake-fail', 'fake-pass']);
    const p = make();
    await expect(p.setUpPod(req())).rejects.toThrow(
      'set up network of pod prod/web (network testnet): CNI plugin fake-fail ADD failed: no more addresses: range 10.1.2.0/24 is full',
    );
    expect(summary()).toEqual([
      'ADD loopback lo',
      'ADD fake-ip eth0',
      'ADD fake-fail eth0',
      'DEL fake-pass eth0',
      'DEL fake-fail eth0',
      'DEL fake-ip eth0',
      'DEL loopback lo',
    ]);
    expect(await p.cachedSandboxes()).toEqual([]);
  });

  it('a plugin that fails without the spec JSON is reported by its stderr', async () => {
    await useConfig(['fake-stderr']);
    await expect(make().setUpPod(req())).rejects.toThrow(/CNI plugin fake-stderr ADD failed: panic: something odd/);
  });

  it('when the undoing DEL fails too, the cache entry stays for a later retry', async () => {
    await useConfig(['fake-ip', 'fake-delfail', 'fake-fail']);
    const p = make();
    await expect(p.setUpPod(req())).rejects.toThrow(/fake-fail ADD failed/);
    expect(await p.cachedSandboxes()).toEqual([ID]);
    // a teardown reports the DEL error, naming the pod, and keeps the entry
    await expect(p.tearDownPod(req())).rejects.toThrow(
      'tear down network of pod prod/web (network testnet): CNI plugin fake-delfail DEL failed: cannot delete',
    );
    expect(await p.cachedSandboxes()).toEqual([ID]);
    // every plugin still got its DEL despite the failure in the middle
    expect(summary().slice(-5)).toEqual([
      'DEL fake-fail eth0',
      'DEL fake-delfail eth0',
      'DEL fake-ip eth0',
      'DEL loopback lo',
      'DEL loopback lo',
    ]);
  });

  it('DEL after a restart uses the cached config even though the conf dir changed, with an empty netns when it is gone', async () => {
    await useConfig(['fake-ip', 'fake-pass'], 'old');
    const before = make();
    await before.setUpPod(req());
    before.close();
    await useConfig(['fake-ip'], 'new');
    await clearCalls();
    const after = make();
    expect(after.status().configName).toBe('new');
    expect(await after.podNetwork(ID)).toEqual({ ips: ['10.1.2.3', 'fd00::5'], networkName: 'old' });
    // the recovery path knows no pod names and no netns
    await after.tearDownPod({
      podName: '',
      podNamespace: '',
      podUid: '',
      sandboxId: ID,
      netnsPath: '/proc/999999999/ns/net',
      portMappings: [],
    });
    expect(summary()).toEqual(['DEL fake-pass eth0', 'DEL fake-ip eth0']); // no netns: no loopback DEL
    expect(calls()[0].stdin.name).toBe('old');
    expect(calls()[0].env.CNI_NETNS).toBe('');
    expect(calls()[0].env.CNI_ARGS).toBe(
      `IgnoreUnknown=1;K8S_POD_NAMESPACE=prod;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=${ID};K8S_POD_UID=uid-1`,
    );
    expect(await after.cachedSandboxes()).toEqual([]);
  });

  it('no cache entry: nothing runs, unless the sandbox was adopted (then DEL with the current config)', async () => {
    await useConfig(['fake-ip', 'fake-pass']);
    const p = make();
    await p.tearDownPod(req());
    expect(summary()).toEqual([]);
    await p.tearDownPod(req({ adopted: true }));
    expect(summary()).toEqual(['DEL fake-pass eth0', 'DEL fake-ip eth0', 'DEL loopback lo']);
  });

  it('an unreadable cache entry is torn down with the current config and removed', async () => {
    await useConfig(['fake-ip']);
    const p = make();
    await fsp.mkdir(cacheDir, { recursive: true });
    await fsp.writeFile(path.join(cacheDir, `${ID}.json`), '{ truncated');
    expect(await p.cachedSandboxes()).toEqual([ID]);
    expect(await p.podNetwork(ID)).toEqual({ ips: [], networkName: 'testnet' });
    await p.tearDownPod(req());
    expect(summary()).toEqual(['DEL fake-ip eth0', 'DEL loopback lo']);
    expect(await p.cachedSandboxes()).toEqual([]);
  });

  it('a teardown waits for a setup of the same sandbox still running', async () => {
    await useConfig(['fake-ip', 'fake-pass']);
    const p = make();
    const up = p.setUpPod(req());
    const down = p.tearDownPod(req());
    await Promise.all([up, down]);
    expect(summary()).toEqual([
      'ADD loopback lo',
      'ADD fake-ip eth0',
      'ADD fake-pass eth0',
      'DEL fake-pass eth0',
      'DEL fake-ip eth0',
      'DEL loopback lo',
    ]);
    expect(await p.cachedSandboxes()).toEqual([]);
  });
});

describe('logging', () => {
  it('lines about a pod carry its full sandbox id', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const stream = new PassThrough();
    stream.on('data', (c: Buffer) =>
      c
        .toString('utf8')
        .split('\n')
        .filter(Boolean)
        .forEach((l) => lines.push(JSON.parse(l) as Record<string, unknown>)),
    );
    const logger = winston.createLogger({
      level: 'debug',
      format: winston.format.json(),
      transports: [new winston.transports.Stream({ stream })],
    });
    await useConfig(['fake-ip']);
    plugin = createNetworkPlugin({ plugin: 'cni', confDir, binDirs: [bin], cacheDir, logger, probeIntervalMs: 60_000 });
    await plugin.setUpPod(req());
    await plugin.tearDownPod(req());
    await new Promise((r) => setImmediate(r));
    expect(lines.find((l) => l.message === 'pod network is set up')).toMatchObject({
      podSandboxId: ID,
      network: 'testnet',
      ips: ['10.1.2.3', 'fd00::5'],
    });
    expect(lines.find((l) => l.message === 'pod network is torn down')).toMatchObject({ podSandboxId: ID });
    const done = lines.filter((l) => l.message === 'CNI plugin done').map((l) => [l.podSandboxId, l.plugin, l.command]);
    expect(done.slice(0, 2)).toEqual([
      [ID, 'loopback', 'ADD'],
      [ID, 'fake-ip', 'ADD'],
    ]);
    // lo's DEL runs beside the chain's: either may finish first
    expect(done.slice(2).sort()).toEqual([
      [ID, 'fake-ip', 'DEL'],
      [ID, 'loopback', 'DEL'],
    ]);
  });
});

describe('runaway plugins', () => {
  /** Running, not a zombie (killed orphans may wait for a reaper that a container's pid 1 never is). */
  const alive = (pid: number): boolean => {
    try {
      return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return false;
    }
  };

  it('a hanging plugin is killed at the timeout, with what it started, and the chain is undone', async () => {
    await useConfig(['fake-ip', { type: 'fake-hang' }]);
    const p = make(1000);
    const t0 = Date.now();
    await expect(p.setUpPod(req())).rejects.toThrow(/CNI plugin fake-hang ADD failed: timed out after 1000 ms/);
    expect(Date.now() - t0).toBeLessThan(5000);
    const child = Number(await fsp.readFile(path.join(bin, 'hang.pid'), 'utf8'));
    await new Promise((r) => setTimeout(r, 100));
    expect(alive(child)).toBe(false);
    // the hang script's DEL also hangs (it ignores the command): a second timeout, and the entry stays
    expect(summary()).toEqual(['ADD loopback lo', 'ADD fake-ip eth0', 'DEL fake-ip eth0', 'DEL loopback lo']);
    expect(await p.cachedSandboxes()).toEqual([ID]);
  });

  describe.each([
    ["Node's spawn", (): PluginLauncher => directLauncher],
    ['the shell launcher', (): PluginLauncher => new ShellLauncher(path.join(dir, 'exec'))],
  ])('started by %s', (_, launcher) => {
    it('an abort kills the plugin and what it started at once; an already-aborted signal starts nothing', async () => {
      const conf = { type: 'fake-hang', name: 'n', cniVersion: '0.4.0' };
      const inv = {
        command: 'ADD' as const,
        containerId: ID,
        netns: '',
        ifName: 'eth0',
        args: {},
        binDirs: [bin],
        timeoutMs: 60_000,
      };
      const l = launcher();
      const ac = new AbortController();
      const t0 = Date.now();
      const run = execPlugin(conf, { ...inv, signal: ac.signal }, l);
      setTimeout(() => ac.abort(), 300);
      await expect(run).rejects.toThrow('CNI plugin fake-hang ADD failed: cancelled');
      expect(Date.now() - t0).toBeLessThan(3000);
      const child = Number(await fsp.readFile(path.join(bin, 'hang.pid'), 'utf8'));
      await new Promise((r) => setTimeout(r, 100));
      expect(alive(child)).toBe(false);
      await fsp.rm(path.join(bin, 'hang.pid'), { force: true });
      await expect(execPlugin(conf, { ...inv, signal: ac.signal }, l)).rejects.toThrow(/cancelled/);
      await new Promise((r) => setTimeout(r, 200));
      await expect(fsp.stat(path.join(bin, 'hang.pid'))).rejects.toThrow(/ENOENT/);
      l.close();
    });

    it("reports a plugin's exit code, its stderr, and at most MAX_OUTPUT of what it printed", async () => {
      await fsp.writeFile(
        path.join(bin, 'chatty'),
        `#!/bin/sh\nhead -c ${MAX_OUTPUT + 4096} /dev/zero | tr '\\0' x\necho oops >&2\nexit 4\n`,
        { mode: 0o755 },
      );
      const l = launcher();
      const exit = await l.launch(path.join(bin, 'chatty'), { PATH: process.env.PATH ?? '' }, '').done;
      l.close();
      expect(exit).toMatchObject({ code: 4, signal: null, stderr: 'oops\n' });
      // the length first: a failure should not print a megabyte
      expect(exit.stdout.length).toBe(MAX_OUTPUT);
      expect(exit.stdout).toMatch(/^x+$/);
    });
  });

  it("the daemon's choice: the shell launcher where sh and setsid are found, Node's spawn where either is missing", () => {
    const execDir = path.join(dir, 'exec');
    const found = (bin: string): string => `/usr/bin/${bin}`;
    expect(pluginLauncher(execDir, found).launcher).toBeInstanceOf(ShellLauncher);
    expect(pluginLauncher(undefined, found)).toEqual({
      launcher: directLauncher,
      why: 'no scratch directory given: plugins are spawned by crishim',
    });
    for (const gone of ['sh', 'setsid']) {
      const choice = pluginLauncher(execDir, (bin) => (bin === gone ? undefined : found(bin)));
      expect(choice.launcher).toBe(directLauncher);
      expect(choice.why).toBe(`no ${gone} found: plugins are spawned by crishim`);
    }
  });

  it('the shell launcher: a shell that dies fails and stops what it was running, the next plugin gets a new one, nothing is left behind', async () => {
    const execDir = path.join(dir, 'exec');
    const l = new ShellLauncher(execDir);
    const env = { PATH: process.env.PATH ?? '' };
    const hung = l.launch(path.join(bin, 'fake-hang'), env, '');
    const shells = (): number[] =>
      readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
            return (
              Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid &&
              readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(`crishim-cni-launch\0${execDir}\0`)
            );
          } catch {
            return false;
          }
        })
        .map(Number);
    // the request is on its way once the hang script has written its child's pid
    for (let i = 0; i < 50 && !existsSync(path.join(bin, 'hang.pid')); i++) await new Promise((r) => setTimeout(r, 50));
    const [shell] = shells();
    expect(shell).toBeGreaterThan(0);
    process.kill(shell, 'SIGKILL');
    await expect(hung.done).rejects.toThrow(/the shell that starts CNI plugins exited \(SIGKILL\)/);
    // and what it was running is stopped, not left to finish behind crishim's back
    const child = Number(await fsp.readFile(path.join(bin, 'hang.pid'), 'utf8'));
    for (let i = 0; i < 50 && alive(child); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(child)).toBe(false);
    const exit = await l.launch(path.join(bin, 'loopback'), { ...env, CNI_COMMAND: 'ADD' }, '{"cniVersion":"0.4.0"}')
      .done;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(JSON.parse(exit.stdout)).toMatchObject({ ips: [{ address: '127.0.0.1/8' }] });
    expect(shells()).toHaveLength(1);
    // each request's files are removed off the event loop, just after its answer
    for (let i = 0; i < 50 && readdirSync(execDir).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(readdirSync(execDir)).toEqual([]);
    l.close();
    for (let i = 0; i < 50 && shells().length; i++) await new Promise((r) => setTimeout(r, 20));
    expect(shells()).toEqual([]);
  });

  it('a binary missing at exec time is an error naming it', async () => {
    await expect(
      execPlugin(
        { type: 'gone', name: 'n', cniVersion: '0.4.0' },
        { command: 'DEL', containerId: ID, netns: '', ifName: 'eth0', args: {}, binDirs: [bin], timeoutMs: 1000 },
      ),
    ).rejects.toThrow(`CNI plugin gone DEL failed: binary not found in ${bin}`);
  });
});
