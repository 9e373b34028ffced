import * as path from 'path';
import { DEFAULT_CGROUP_ROOT, parseProcCgroup } from '../../stats/cgroup-path';
import type { Check, HostProbes } from '../types';

/**
 * The files stats read per cgroup (src/stats/cgroup-v1.ts, cgroup-v2.ts), checked on our own cgroup.
 * pids.current does not exist in a root cgroup: cgroup.procs shows that hierarchy is mounted.
 */
const V1_FILES: Array<[controller: string, file: string]> = [
  ['cpuacct', 'cpuacct.usage'],
  ['memory', 'memory.usage_in_bytes'],
  ['memory', 'memory.limit_in_bytes'],
  ['memory', 'memory.stat'],
  ['pids', 'cgroup.procs'],
];
const V2_CONTROLLERS = ['cpu', 'memory', 'pids'];

async function missingCgroupFiles(probes: HostProbes, root: string): Promise<{ version: number; missing: string[] }> {
  const text = await probes.readText('/proc/self/cgroup');
  if (text === undefined) return { version: 0, missing: ['/proc/self/cgroup'] };
  const cg = parseProcCgroup(text);
  const missing: string[] = [];
  if (cg.version === 1) {
    for (const [controller, file] of V1_FILES) {
      const candidates = [controller, 'cpu,cpuacct', 'cpuacct,cpu'].filter((c) => c.split(',').includes(controller));
      const rel = cg.paths.get(controller) ?? '/';
      let found = false;
      for (const c of candidates) if (await probes.exists(path.join(root, c, rel, file))) found = true;
      if (!found) missing.push(path.join(root, controller, rel, file));
    }
  } else {
    const controllers = (await probes.readText(path.join(root, 'cgroup.controllers'))) ?? '';
    for (const c of V2_CONTROLLERS)
      if (!controllers.split(/\s+/).includes(c))
        missing.push(`${c} controller in ${path.join(root, 'cgroup.controllers')}`);
  }
  return { version: cg.version, missing };
}

/** What the stats (cgroup files, /proc/<pid>/net/dev) and streaming (nsenter, /proc/<pid>/ns/net) paths read. */
export const kernelFeaturesCheck: Check = {
  name: 'kernel-features',
  async run({ probes }) {
    const cg = await missingCgroupFiles(probes, DEFAULT_CGROUP_ROOT);
    const missing = [...cg.missing];
    if (!(await probes.exists('/proc/self/net/dev'))) missing.push('/proc/<pid>/net/dev');
    if (!(await probes.exists('/proc/self/ns/net'))) missing.push('/proc/<pid>/ns/net (network namespaces)');
    if (!probes.which('nsenter')) missing.push('nsenter (util-linux) on PATH');
    if (missing.length === 0) {
      return {
        name: this.name,
        status: 'ok',
        found: `cgroup v${cg.version} stat files, /proc/<pid>/net/dev, network namespaces and nsenter are there`,
      };
    }
    return {
      name: this.name,
      status: 'fail',
      found: `missing ${missing.join(', ')}: pod stats or port-forward will fail`,
      action: 'mount the cgroup controllers (cpu, cpuacct, memory, pids) and install util-linux',
    };
  },
};
