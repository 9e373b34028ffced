/**
 * The CNI plugin chain of a conflist, run directly as a runtime runs it: ADD in order with each
 * plugin's result handed to the next as `prevResult`, DEL in reverse. The bench's floors use it
 * to set up and tear down a pod's network without crishim in between.
 */
import { spawn } from 'child_process';
import { existsSync, readFileSync } from 'fs';
import * as path from 'path';

export interface ConfList {
  name: string;
  cniVersion: string;
  plugins: Array<{ type: string } & Record<string, unknown>>;
}

const CNI_DIRS = ['/opt/cni/bin', '/usr/lib/cni'];

export function readConfList(file: string): ConfList {
  return JSON.parse(readFileSync(file, 'utf8')) as ConfList;
}

function runPlugin(command: 'ADD' | 'DEL', type: string, env: Record<string, string>, stdin: string): Promise<string> {
  const bin = CNI_DIRS.map((d) => path.join(d, type)).find((f) => existsSync(f));
  if (!bin) return Promise.reject(new Error(`CNI plugin ${type} not found in ${CNI_DIRS.join(', ')}`));
  return new Promise((resolve, reject) => {
    const p = spawn(bin, [], {
      env: {
        ...env,
        CNI_COMMAND: command,
        PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
        CNI_PATH: CNI_DIRS.join(':'),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (c: Buffer) => (out += c.toString()));
    p.on('error', reject);
    p.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`CNI ${command} ${type}: exit ${code}: ${out.slice(0, 200)}`)),
    );
    p.stdin.end(stdin);
  });
}

/** pid 0: no netns (allowed for DEL), when the pause process is gone and its pid may be another's. */
const pluginEnv = (sandboxId: string, pid: number): Record<string, string> => ({
  CNI_CONTAINERID: sandboxId,
  CNI_NETNS: pid > 0 ? `/proc/${pid}/ns/net` : '',
  CNI_IFNAME: 'eth0',
});

/** ADD of every plugin in order; the last one's result is the pod's. */
export async function cniAdd(conf: ConfList, sandboxId: string, pid: number): Promise<unknown> {
  let prevResult: unknown;
  for (const plugin of conf.plugins) {
    const stdin = JSON.stringify({
      ...plugin,
      name: conf.name,
      cniVersion: conf.cniVersion,
      ...(prevResult === undefined ? {} : { prevResult }),
    });
    prevResult = JSON.parse(await runPlugin('ADD', plugin.type, pluginEnv(sandboxId, pid), stdin));
  }
  return prevResult;
}

/** DEL of every plugin, last first. */
export async function cniDel(conf: ConfList, sandboxId: string, pid: number): Promise<void> {
  for (const plugin of [...conf.plugins].reverse()) {
    const stdin = JSON.stringify({ ...plugin, name: conf.name, cniVersion: conf.cniVersion });
    await runPlugin('DEL', plugin.type, pluginEnv(sandboxId, pid), stdin);
  }
}
