import { promises as fsp } from 'fs';
import * as path from 'path';

/**
 * Reads a container's resource usage straight from the cgroup filesystem
 * (v1 and v2, cgroupfs and systemd layouts alike): the paths come from
 * /proc/<pid>/cgroup of the container's init process, so no layout is guessed.
 */

export interface CgroupPaths {
  version: 1 | 2;
  /** v1: controller name -> path inside that hierarchy; v2: '' -> unified path. */
  paths: Map<string, string>;
}

export interface CgroupUsage {
  cpuUsageNanos?: bigint;
  memoryUsage?: number;
  memoryLimit?: number;
  workingSet?: number;
  rss?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  pids?: number;
}

/** Parses /proc/<pid>/cgroup. v2 when only the unified `0::` line carries a path that matters. */
export function parseProcCgroup(text: string): CgroupPaths {
  const paths = new Map<string, string>();
  let unified: string | undefined;
  for (const line of text.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[2] === '') unified = m[3];
    else for (const c of m[2].split(',')) paths.set(c.replace(/^name=/, ''), m[3]);
  }
  if (paths.has('memory') || paths.has('cpuacct')) return { version: 1, paths };
  return { version: 2, paths: new Map([['', unified ?? '/']]) };
}

/** `key value` lines (memory.stat, cpu.stat) into numbers. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) out.set(k, Number(v));
  }
  return out;
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

async function readNumber(file: string): Promise<number | undefined> {
  const t = (await readText(file))?.trim();
  return t && /^\d+$/.test(t) ? Number(t) : undefined;
}

/** v1 hierarchies may be co-mounted (`cpu,cpuacct`): find the directory holding a controller. */
async function v1Mount(root: string, controller: string): Promise<string> {
  for (const candidate of [controller, 'cpu,cpuacct', 'cpuacct,cpu']) {
    const dir = path.join(root, candidate);
    if (candidate.split(',').includes(controller) && (await fsp.stat(dir).then(() => true, () => false))) return dir;
  }
  return path.join(root, controller);
}

/** The kubelet's working set: usage minus inactive file pages, never below zero. */
export function workingSet(usage: number | undefined, inactiveFile: number | undefined): number | undefined {
  if (usage === undefined) return undefined;
  return Math.max(0, usage - (inactiveFile ?? 0));
}

/** A limit that means "none" (v1 prints a huge page-rounded number, v2 prints `max`). */
const NO_LIMIT = 2 ** 60;

export async function readCgroupUsage(cg: CgroupPaths, root = '/sys/fs/cgroup'): Promise<CgroupUsage> {
  if (cg.version === 2) {
    const dir = path.join(root, cg.paths.get('') ?? '/');
    const [cpuStat, current, max, memStat, pids] = await Promise.all([
      readText(path.join(dir, 'cpu.stat')),
      readNumber(path.join(dir, 'memory.current')),
      readText(path.join(dir, 'memory.max')),
      readText(path.join(dir, 'memory.stat')),
      readNumber(path.join(dir, 'pids.current')),
    ]);
    const cpu = cpuStat ? parseFlatKeyed(cpuStat).get('usage_usec') : undefined;
    const ms = memStat ? parseFlatKeyed(memStat) : new Map<string, number>();
    const limit = max && /^\d+$/.test(max.trim()) ? Number(max.trim()) : undefined;
    return {
      cpuUsageNanos: cpu !== undefined ? BigInt(cpu) * 1000n : undefined,
      memoryUsage: current,
      memoryLimit: limit !== undefined && limit < NO_LIMIT ? limit : undefined,
      workingSet: workingSet(current, ms.get('inactive_file')),
      rss: ms.get('anon'),
      pageFaults: ms.get('pgfault'),
      majorPageFaults: ms.get('pgmajfault'),
      pids,
    };
  }
  const dirOf = async (controller: string): Promise<string> => path.join(await v1Mount(root, controller), cg.paths.get(controller) ?? '/');
  const [cpuDir, memDir, pidsDir] = await Promise.all([dirOf('cpuacct'), dirOf('memory'), dirOf('pids')]);
  const [cpu, usage, limit, memStat, pids] = await Promise.all([
    readText(path.join(cpuDir, 'cpuacct.usage')),
    readNumber(path.join(memDir, 'memory.usage_in_bytes')),
    readNumber(path.join(memDir, 'memory.limit_in_bytes')),
    readText(path.join(memDir, 'memory.stat')),
    readNumber(path.join(pidsDir, 'pids.current')),
  ]);
  const ms = memStat ? parseFlatKeyed(memStat) : new Map<string, number>();
  const cpuText = cpu?.trim();
  return {
    cpuUsageNanos: cpuText && /^\d+$/.test(cpuText) ? BigInt(cpuText) : undefined,
    memoryUsage: usage,
    memoryLimit: limit !== undefined && limit < NO_LIMIT ? limit : undefined,
    workingSet: workingSet(usage, ms.get('total_inactive_file') ?? ms.get('inactive_file')),
    rss: ms.get('total_rss') ?? ms.get('rss'),
    pageFaults: ms.get('total_pgfault') ?? ms.get('pgfault'),
    majorPageFaults: ms.get('total_pgmajfault') ?? ms.get('pgmajfault'),
    pids,
  };
}

export async function cgroupOfPid(pid: number): Promise<CgroupPaths | undefined> {
  const text = await readText(`/proc/${pid}/cgroup`);
  return text ? parseProcCgroup(text) : undefined;
}
