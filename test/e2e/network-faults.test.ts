/**
 * CNI plugins that fail, hang, or fail only on DEL: RunPodSandbox must undo
 * everything, and a sandbox must stay removable.
 */
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  call,
  checkpointFiles,
  codeOf,
  containersOfPod,
  podConfig,
  reservedIps,
  startCrishim,
  teardown,
  type Crishim,
} from './harness';

jest.setTimeout(180_000);

let h: Crishim;
let bin: string;

/** A chained CNI plugin written in node: passes prevResult through on ADD, behaviour set by its name. */
const PLUGIN = `#!/usr/bin/env node
const fs = require('fs');
const cmd = process.env.CNI_COMMAND;
const conf = JSON.parse(fs.readFileSync(0, 'utf8'));
const mode = require('path').basename(process.argv[1]);
const fail = (msg) => { process.stdout.write(JSON.stringify({ cniVersion: conf.cniVersion, code: 999, msg })); process.exit(1); };
if (cmd === 'VERSION') { process.stdout.write(JSON.stringify({ cniVersion: '0.4.0', supportedVersions: ['0.4.0'] })); process.exit(0); }
if (mode === 'crishim-fail' && cmd === 'ADD') fail('injected failure for the test');
if (mode === 'crishim-hang' && cmd === 'ADD') setInterval(() => {}, 1000);
else {
  if (mode === 'crishim-delfail' && cmd === 'DEL' && fs.existsSync(conf.marker)) fail('injected DEL failure');
  if (cmd === 'ADD') process.stdout.write(JSON.stringify(conf.prevResult));
}
`;

async function useChain(extra: Record<string, unknown>): Promise<void> {
  const shipped = JSON.parse(await fsp.readFile(path.join(h.cniConfDir, '10-crishim.conflist'), 'utf8'));
  const name = `faults-${extra.type as string}`;
  await fsp.writeFile(
    path.join(h.cniConfDir, '05-faults.conflist'),
    JSON.stringify({ ...shipped, name, plugins: [shipped.plugins[0], extra] }),
  );
  const deadline = Date.now() + 15_000;
  for (;;) {
    const s = await call(h.runtime, 'Status', { verbose: true });
    if (JSON.parse(s.info?.config ?? '{}').cniConfig === name) return;
    if (Date.now() > deadline) throw new Error(`config ${name} never picked up`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function pluginProcesses(name: string): Promise<number> {
  let n = 0;
  for (const pid of await fsp.readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = await fsp.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(name)) n++;
  }
  return n;
}

beforeAll(async () => {
  bin = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-cni-bin-'));
  for (const name of ['crishim-fail', 'crishim-hang', 'crishim-delfail'])
    await fsp.writeFile(path.join(bin, name), PLUGIN, { mode: 0o755 });
  h = await startCrishim({
    subnetIndex: 211,
    args: ['--cni-exec-timeout', '3', '--cni-bin-dir', `${bin},/usr/lib/cni`],
  });
});
afterAll(async () => {
  await teardown(h);
  await fsp.rm(bin, { recursive: true, force: true });
});

async function expectClean(uid: string): Promise<void> {
  expect(await containersOfPod(uid)).toEqual([]);
  expect(await reservedIps(h.cni.ipamDir)).toEqual([]);
  expect(await fsp.readdir(h.cniCacheDir).catch(() => [])).toEqual([]);
  expect(await checkpointFiles(h)).toEqual([]);
}

it('a failing plugin fails RunPodSandbox with its message and the bridge IP is released', async () => {
  await useChain({ type: 'crishim-fail' });
  const config = podConfig('cni-fail');
  const err = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
  expect(err.details).toContain('crishim-fail');
  expect(err.details).toContain('injected failure for the test');
  await expectClean((config.metadata as { uid: string }).uid);
});

it('a hanging plugin is killed at the timeout and everything is undone', async () => {
  await useChain({ type: 'crishim-hang' });
  const config = podConfig('cni-hang');
  const err = await codeOf(call(h.runtime, 'RunPodSandbox', { config }));
  expect(err.details).toMatch(/crishim-hang.*timed out/);
  await expectClean((config.metadata as { uid: string }).uid);
  expect(await pluginProcesses('crishim-hang')).toBe(0);
});

it('a DEL that fails is reported by StopPodSandbox, never blocks removal, and is retried after a restart', async () => {
  const marker = path.join(h.dir, 'del-fails');
  await useChain({ type: 'crishim-delfail', marker });
  const config = podConfig('cni-delfail');
  const { pod_sandbox_id: id } = await call(h.runtime, 'RunPodSandbox', { config });
  const ip = (await call(h.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status?.network?.ip ?? '';
  expect(await reservedIps(h.cni.ipamDir)).toContain(ip);

  await fsp.writeFile(marker, '');
  const stop = await codeOf(call(h.runtime, 'StopPodSandbox', { pod_sandbox_id: id }));
  expect(stop.details).toMatch(/injected DEL failure/);
  expect(stop.details).toMatch(/3 attempts/);
  // removal still succeeds; the network state waits for a retry
  await call(h.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
  expect(await containersOfPod((config.metadata as { uid: string }).uid)).toEqual([]);
  expect(await fsp.readdir(h.cniCacheDir)).toEqual([`${id}.json`]);

  // once DEL works again, the next start releases the orphaned IP
  await fsp.rm(marker);
  await h.restart();
  expect(await reservedIps(h.cni.ipamDir)).not.toContain(ip);
  await expectClean((config.metadata as { uid: string }).uid);
  await fsp.rm(path.join(h.cniConfDir, '05-faults.conflist'));
});
