import { promises as fsp } from 'fs';
import * as path from 'path';
import type Docker from 'dockerode';
import type { DockerApi } from '../docker/client';
import { cgroupOfPid, readCgroupUsage, type CgroupPaths, type CgroupUsage } from './cgroup';
import { readNetDev, type InterfaceUsage } from './netdev';

/** What stats need about a container beyond Docker's list answer; learnt by one inspect, then cached. */
interface Facts {
  pid: number;
  cgroup?: CgroupPaths;
  upperDir?: string;
}

export interface Sample {
  timestamp: string;
  usage: CgroupUsage;
  /** CPU use since the previous sample of the same container, in nanocores. */
  nanoCores?: number;
  writable?: { bytes: number; inodes: number };
}

/** A du of the writable layer is a directory walk: bounded, and remembered for a while. */
const DU_TTL_MS = 10_000;
const DU_MAX_ENTRIES = 50_000;

async function du(dir: string): Promise<{ bytes: number; inodes: number }> {
  let bytes = 0;
  let inodes = 0;
  const stack = [dir];
  while (stack.length > 0 && inodes < DU_MAX_ENTRIES) {
    const d = stack.pop() as string;
    let entries: import('fs').Dirent[];
    try {
      entries = await fsp.readdir(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      inodes++;
      const p = path.join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (e.isFile()) bytes += (await fsp.lstat(p).catch(() => undefined))?.size ?? 0;
    }
  }
  return { bytes, inodes };
}

export interface StatsCollector {
  /** Usage of one container; `running` from Docker's list answer avoids an inspect for stopped ones. */
  sample(id: string, running: boolean): Promise<Sample>;
  /** Interfaces of the network namespace a container's process lives in (the pod's, for a pause container). */
  network(id: string): Promise<InterfaceUsage[] | undefined>;
  /** Forgets containers that no longer exist. */
  retain(ids: Set<string>): void;
}

export function createStatsCollector(docker: DockerApi, now: () => bigint = () => BigInt(Date.now()) * 1_000_000n): StatsCollector {
  const facts = new Map<string, Facts>();
  const previous = new Map<string, { t: bigint; cpu: bigint }>();
  const duCache = new Map<string, { at: number; value: { bytes: number; inodes: number } }>();

  /** Cached facts, re-learnt when the process is gone or is not this container's any more. */
  const factsOf = async (id: string): Promise<Facts | undefined> => {
    const known = facts.get(id);
    if (known && known.pid > 0) {
      const cg = await fsp.readFile(`/proc/${known.pid}/cgroup`, 'utf8').catch(() => '');
      if (cg.includes(id)) return known;
    }
    let info: Docker.ContainerInspectInfo;
    try {
      info = await docker.getContainer(id).inspect();
    } catch {
      facts.delete(id);
      return undefined;
    }
    const pid = info.State.Running ? info.State.Pid : 0;
    const f: Facts = {
      pid,
      cgroup: pid ? await cgroupOfPid(pid) : undefined,
      upperDir: (info.GraphDriver?.Data as Record<string, string> | undefined)?.UpperDir,
    };
    facts.set(id, f);
    return f;
  };

  return {
    async sample(id, running) {
      const timestamp = now();
      const f = running ? await factsOf(id) : facts.get(id);
      const usage = running && f?.cgroup ? await readCgroupUsage(f.cgroup) : {};
      let nanoCores: number | undefined;
      if (usage.cpuUsageNanos !== undefined) {
        const prev = previous.get(id);
        if (prev && timestamp > prev.t && usage.cpuUsageNanos >= prev.cpu) {
          nanoCores = Number(((usage.cpuUsageNanos - prev.cpu) * 1_000_000_000n) / (timestamp - prev.t));
        }
        previous.set(id, { t: timestamp, cpu: usage.cpuUsageNanos });
      }
      let writable: Sample['writable'];
      if (f?.upperDir) {
        const hit = duCache.get(id);
        if (hit && Date.now() - hit.at < DU_TTL_MS) writable = hit.value;
        else {
          writable = await du(f.upperDir);
          duCache.set(id, { at: Date.now(), value: writable });
        }
      }
      return { timestamp: timestamp.toString(), usage, nanoCores, writable };
    },
    async network(id) {
      const f = await factsOf(id);
      return f?.pid ? readNetDev(f.pid) : undefined;
    },
    retain(ids) {
      for (const m of [facts, previous, duCache] as Array<Map<string, unknown>>) {
        for (const k of [...m.keys()]) if (!ids.has(k)) m.delete(k);
      }
    },
  };
}
