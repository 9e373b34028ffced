import * as fs from 'fs';
import * as path from 'path';
import type * as Docker from '../docker/types';
import { invalidArgument } from '../errors';
import type { RuntimeReq } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { checkCpuset } from './validation';
import { HUGEPAGE_LIMITS_LABEL } from '../labels';

/** CRI resources of a container (and of a pod, for UpdatePodSandboxResources). */
type Resources = NonNullable<RuntimeReq<'UpdateContainerResources'>['linux']>;

/** int64 fields arrive as decimal strings; absurd values are refused before Docker sees them. */
function int64(field: string, value: string | undefined, opts: { min?: number } = {}): number {
  const n = Number(value ?? '0');
  if (!Number.isSafeInteger(n)) throw invalidArgument(`${field} ${JSON.stringify(value)} is not a usable integer`);
  if (opts.min !== undefined && n < opts.min) throw invalidArgument(`${field} must be >= ${opts.min}, got ${n}`);
  return n;
}

export type HugepageLimit = Resources['hugepage_limits'][number];
export type CgroupVersion = 1 | 2;

/** Page sizes as the kubelet spells them (`2MB`, `1GB`, `64KB`), which is also the cgroup file infix. */
const PAGE_SIZE_RE = /^[1-9][0-9]*(B|KB|MB|GB|TB|PB)$/;
const UINT64_MAX = (1n << 64n) - 1n;

/** Checks each limit; returns them normalised (decimal strings), sizes unique. */
export function checkHugepageLimits(limits: HugepageLimit[] | undefined): HugepageLimit[] {
  const seen = new Set<string>();
  return (limits ?? []).map((l, i) => {
    const field = `resources.hugepage_limits[${i}]`;
    if (!PAGE_SIZE_RE.test(l.page_size ?? ''))
      throw invalidArgument(`${field}.page_size ${JSON.stringify(l.page_size)} is not a page size like "2MB" or "1GB"`);
    if (seen.has(l.page_size)) throw invalidArgument(`${field}.page_size ${l.page_size} is listed twice`);
    seen.add(l.page_size);
    const limit = String(l.limit ?? '0');
    if (!/^[0-9]+$/.test(limit) || BigInt(limit) > UINT64_MAX)
      throw invalidArgument(`${field}.limit ${JSON.stringify(limit)} must be a non-negative integer`);
    return { page_size: l.page_size, limit: BigInt(limit).toString() };
  });
}

/** The limits a create recorded in HUGEPAGE_LIMITS_LABEL (empty when none or unreadable). */
export function hugepageLimitsOf(labels: Record<string, string> | undefined): HugepageLimit[] {
  const raw = labels?.[HUGEPAGE_LIMITS_LABEL];
  if (!raw) return [];
  try {
    return checkHugepageLimits(JSON.parse(raw) as HugepageLimit[]);
  } catch {
    return [];
  }
}

/** Host cgroup version as seen locally (cgroup v2 mounts expose cgroup.controllers at the root). */
export function localCgroupVersion(root = '/sys/fs/cgroup'): CgroupVersion {
  return fs.existsSync(path.join(root, 'cgroup.controllers')) ? 2 : 1;
}

/** The cgroup version Docker runs containers under: its own report, else the local mount. */
export function cgroupVersionOf(engine: Pick<ServiceDeps['engine'], 'current'> | undefined): CgroupVersion {
  const v = engine?.current().cgroupVersion;
  if (v === '2') return 2;
  if (v === '1') return 1;
  return localCgroupVersion();
}

/** runc's cpu.weight -> cpu.shares inverse, rounded up so Docker's shares -> weight gives the weight back. */
export function sharesFromWeight(weight: number): number {
  return 2 + Math.ceil(((weight - 1) * 262142) / 9999);
}

function unifiedInt(key: string, value: string, min: number): number {
  const n = /^[0-9]+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min)
    throw invalidArgument(
      `resources.unified[${JSON.stringify(key)}] ${JSON.stringify(value)} must be an integer >= ${min} or "max"`,
    );
  return n;
}

/** `cpu.max` is "<quota|max> [period]". */
function cpuMax(value: string): Docker.HostConfig {
  const parts = value.trim().split(/\s+/);
  if (parts.length > 2 || !parts[0])
    throw invalidArgument(`resources.unified["cpu.max"] ${JSON.stringify(value)} must be "<quota|max> [period]"`);
  const out: Docker.HostConfig = { CpuQuota: parts[0] === 'max' ? -1 : unifiedInt('cpu.max', parts[0], 1000) };
  if (parts[1] !== undefined) {
    const period = unifiedInt('cpu.max', parts[1], 1000);
    if (period > 1_000_000)
      throw invalidArgument(`resources.unified["cpu.max"] period must be within [1000, 1000000] us, got ${period}`);
    out.CpuPeriod = period;
  }
  return out;
}

/** One cgroup v2 key onto the Docker field that sets it; anything else Docker cannot express. */
function unifiedKey(key: string, value: string): Docker.HostConfig {
  const field = `resources.unified[${JSON.stringify(key)}]`;
  switch (key) {
    case 'memory.max':
      // "max" is the default Docker gives a container without a limit
      return value === 'max' ? {} : { Memory: unifiedInt(key, value, 1) };
    case 'cpu.max':
      return cpuMax(value);
    case 'pids.max':
      return { PidsLimit: value === 'max' ? -1 : unifiedInt(key, value, 1) };
    case 'cpuset.cpus':
      return { CpusetCpus: checkCpuset(field, value) };
    case 'cpuset.mems':
      return { CpusetMems: checkCpuset(field, value) };
    case 'cpu.weight': {
      const w = unifiedInt(key, value, 1);
      if (w > 10000) throw invalidArgument(`${field} must be within [1, 10000], got ${w}`);
      return { CpuShares: sharesFromWeight(w) };
    }
    default:
      throw invalidArgument(
        `${field} is not supported: Docker has no setting for it (supported: memory.max, cpu.max, cpu.weight, pids.max, cpuset.cpus, cpuset.mems)`,
      );
  }
}

/** Docker fields for `resources.unified`; runc refuses the map on cgroup v1, and so do we. */
export function unifiedResources(
  unified: Record<string, string> | undefined,
  version: CgroupVersion,
): Docker.HostConfig {
  const keys = Object.keys(unified ?? {});
  if (keys.length === 0) return {};
  if (version !== 2)
    throw invalidArgument(`resources.unified needs cgroup v2 (this host runs cgroup v1); got ${keys.join(', ')}`);
  const out: Docker.HostConfig = {};
  for (const k of keys.sort()) Object.assign(out, unifiedKey(k, unified![k]));
  return out;
}

/**
 * Docker resource fields for CRI LinuxContainerResources (used by create and update).
 * Hugepage limits are validated here but applied to the cgroup after start (no Docker field).
 */
export function dockerResources(
  r: Resources | null | undefined,
  oomFloor: number,
  cgroupVersion: CgroupVersion = localCgroupVersion(),
): Docker.HostConfig {
  if (!r) return {};
  const out: Docker.HostConfig = {};
  const shares = int64('resources.cpu_shares', r.cpu_shares, { min: 0 });
  const quota = int64('resources.cpu_quota', r.cpu_quota, { min: -1 });
  const period = int64('resources.cpu_period', r.cpu_period, { min: 0 });
  const memory = int64('resources.memory_limit_in_bytes', r.memory_limit_in_bytes, { min: 0 });
  const swap = int64('resources.memory_swap_limit_in_bytes', r.memory_swap_limit_in_bytes, { min: -1 });
  const oom = int64('resources.oom_score_adj', r.oom_score_adj);
  if (oom < -1000 || oom > 1000)
    throw invalidArgument(`resources.oom_score_adj must be within [-1000, 1000], got ${oom}`);
  if (period !== 0 && (period < 1000 || period > 1_000_000))
    throw invalidArgument(`resources.cpu_period must be within [1000, 1000000] us, got ${period}`);
  checkHugepageLimits(r.hugepage_limits);
  if (shares) out.CpuShares = shares;
  if (quota) out.CpuQuota = quota;
  if (period) out.CpuPeriod = period;
  if (memory) out.Memory = memory;
  if (r.cpuset_cpus) out.CpusetCpus = checkCpuset('resources.cpuset_cpus', r.cpuset_cpus);
  if (r.cpuset_mems) out.CpusetMems = checkCpuset('resources.cpuset_mems', r.cpuset_mems);
  // unified is applied last by runc too, so it wins over the typed fields
  Object.assign(out, unifiedResources(r.unified, cgroupVersion));
  // Docker refuses a memory limit above the current swap limit; keep them together
  if (out.Memory) out.MemorySwap = swap || out.Memory;
  // kernels that refuse negative values (see design notes) would fail the container
  if (oom) out.OomScoreAdj = Math.max(oom, oomFloor);
  return out;
}
