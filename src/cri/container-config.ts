import * as fs from 'fs';
import * as path from 'path';
import type * as Docker from '../docker/types';
import { invalidArgument } from '../errors';
import type { RuntimeReq } from '../server/rpc';
import { DEFAULTS, type Config } from '../config';
import type { ServiceDeps } from '../rpc/deps';
import { apparmorSecurityOpt, seccompSecurityOpt } from './security';
import { checkCpuset } from './validation';
import { HUGEPAGE_LIMITS_LABEL } from '../labels';
import { isWithin } from '../logging/safe-path';
import { computeCapabilityGrant, type CapabilityGrant } from '../docker/capabilities';
import { capabilityFields, hostDevices, privilegedFields } from './privileged';
import { dockerStopSignal } from './stop-signal';
import { auditContainerConfig, dockerMounts, needsMountApi } from './field-audit';

/** Translation of a CRI ContainerConfig into Docker create options (no I/O but path checks). */

export type ContainerConfig = NonNullable<RuntimeReq<'CreateContainer'>['config']>;
type Resources = NonNullable<NonNullable<ContainerConfig['linux']>['resources']>;
type Mount = ContainerConfig['mounts'][number];

const PROPAGATION: Record<string, string> = {
  PROPAGATION_PRIVATE: '',
  PROPAGATION_HOST_TO_CONTAINER: 'rslave',
  PROPAGATION_BIDIRECTIONAL: 'rshared',
};

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
    if (!PAGE_SIZE_RE.test(l.page_size ?? '')) throw invalidArgument(`${field}.page_size ${JSON.stringify(l.page_size)} is not a page size like "2MB" or "1GB"`);
    if (seen.has(l.page_size)) throw invalidArgument(`${field}.page_size ${l.page_size} is listed twice`);
    seen.add(l.page_size);
    const limit = String(l.limit ?? '0');
    if (!/^[0-9]+$/.test(limit) || BigInt(limit) > UINT64_MAX) throw invalidArgument(`${field}.limit ${JSON.stringify(limit)} must be a non-negative integer`);
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
  if (!Number.isSafeInteger(n) || n < min) throw invalidArgument(`resources.unified[${JSON.stringify(key)}] ${JSON.stringify(value)} must be an integer >= ${min} or "max"`);
  return n;
}

/** `cpu.max` is "<quota|max> [period]". */
function cpuMax(value: string): Docker.HostConfig {
  const parts = value.trim().split(/\s+/);
  if (parts.length > 2 || !parts[0]) throw invalidArgument(`resources.unified["cpu.max"] ${JSON.stringify(value)} must be "<quota|max> [period]"`);
  const out: Docker.HostConfig = { CpuQuota: parts[0] === 'max' ? -1 : unifiedInt('cpu.max', parts[0], 1000) };
  if (parts[1] !== undefined) {
    const period = unifiedInt('cpu.max', parts[1], 1000);
    if (period > 1_000_000) throw invalidArgument(`resources.unified["cpu.max"] period must be within [1000, 1000000] us, got ${period}`);
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
      throw invalidArgument(`${field} is not supported: Docker has no setting for it (supported: memory.max, cpu.max, cpu.weight, pids.max, cpuset.cpus, cpuset.mems)`);
  }
}

/** Docker fields for `resources.unified`; runc refuses the map on cgroup v1, and so do we. */
export function unifiedResources(unified: Record<string, string> | undefined, version: CgroupVersion): Docker.HostConfig {
  const keys = Object.keys(unified ?? {});
  if (keys.length === 0) return {};
  if (version !== 2) throw invalidArgument(`resources.unified needs cgroup v2 (this host runs cgroup v1); got ${keys.join(', ')}`);
  const out: Docker.HostConfig = {};
  for (const k of keys.sort()) Object.assign(out, unifiedKey(k, unified![k]));
  return out;
}

/**
 * Docker resource fields for CRI LinuxContainerResources (used by create and update).
 * Hugepage limits are validated here but applied to the cgroup after start (no Docker field).
 */
export function dockerResources(r: Resources | null | undefined, oomFloor: number, cgroupVersion: CgroupVersion = localCgroupVersion()): Docker.HostConfig {
  if (!r) return {};
  const out: Docker.HostConfig = {};
  const shares = int64('resources.cpu_shares', r.cpu_shares, { min: 0 });
  const quota = int64('resources.cpu_quota', r.cpu_quota, { min: -1 });
  const period = int64('resources.cpu_period', r.cpu_period, { min: 0 });
  const memory = int64('resources.memory_limit_in_bytes', r.memory_limit_in_bytes, { min: 0 });
  const swap = int64('resources.memory_swap_limit_in_bytes', r.memory_swap_limit_in_bytes, { min: -1 });
  const oom = int64('resources.oom_score_adj', r.oom_score_adj);
  if (oom < -1000 || oom > 1000) throw invalidArgument(`resources.oom_score_adj must be within [-1000, 1000], got ${oom}`);
  if (period !== 0 && (period < 1000 || period > 1_000_000)) throw invalidArgument(`resources.cpu_period must be within [1000, 1000000] us, got ${period}`);
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

/** Absolute host path of the CRI log, kept inside the pod's log directory. */
export function resolveLogPath(logDirectory: string | undefined, logPath: string | undefined): string {
  if (!logDirectory || !logPath) return '';
  if (!path.isAbsolute(logDirectory)) throw invalidArgument(`sandbox_config.log_directory ${JSON.stringify(logDirectory)} must be absolute`);
  if (path.isAbsolute(logPath) || logPath.split('/').includes('..') || logPath.includes('\0')) {
    throw invalidArgument(`config.log_path ${JSON.stringify(logPath)} must be relative to the pod log directory`);
  }
  const full = path.resolve(logDirectory, logPath);
  if (!full.startsWith(path.resolve(logDirectory) + path.sep)) {
    throw invalidArgument(`config.log_path ${JSON.stringify(logPath)} escapes the pod log directory`);
  }
  return full;
}

/** Real path of a mount source (the path itself when it cannot be resolved). */
function realMountSource(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

/** `host:container[:opts]` bind specs; refuses missing sources and crishim's own state. */
export function dockerBinds(mounts: Mount[], deps: Pick<ServiceDeps, 'config'>): string[] {
  const protectedDirs = [path.resolve(deps.config.rootDirectory)];
  return mounts.flatMap((m, i) => {
    // image volumes have no host path; dockerMounts gives them to Docker
    if (m.image?.image) return [];
    const field = `config.mounts[${i}]`;
    if (!m.container_path || !path.isAbsolute(m.container_path)) throw invalidArgument(`${field}.container_path must be an absolute path`);
    if (!m.host_path) throw invalidArgument(`${field}.host_path must be set`);
    const host = path.resolve(m.host_path);
    if (protectedDirs.some((d) => host === d || host.startsWith(d + path.sep))) {
      throw invalidArgument(`${field}.host_path ${host} is crishim's own state directory and cannot be mounted`);
    }
    if (!fs.existsSync(host)) throw invalidArgument(`${field}.host_path ${host} does not exist`);
    // a symlink to the state directory is the state directory: check (and hand Docker) the real path
    const real = realMountSource(host);
    if (protectedDirs.some((d) => isWithin(real, realMountSource(d)))) {
      throw invalidArgument(`${field}.host_path ${host} resolves to ${real}, inside crishim's own state directory, and cannot be mounted`);
    }
    if (host.includes(':') || m.container_path.includes(':')) throw invalidArgument(`${field}: paths with ':' are not supported by Docker binds`);
    // a bind string cannot say "recursively read-only": dockerMounts takes it
    if (needsMountApi(m)) return [];
    const opts = [m.readonly ? 'ro' : 'rw'];
    if (m.selinux_relabel) opts.push('Z');
    const prop = PROPAGATION[m.propagation] ?? '';
    if (prop) opts.push(prop);
    return [`${real}:${m.container_path}:${opts.join(',')}`];
  });
}

function userSpec(sec: NonNullable<NonNullable<ContainerConfig['linux']>['security_context']>): string | undefined {
  const group = sec.run_as_group ? String(sec.run_as_group.value) : undefined;
  const user = sec.run_as_username || (sec.run_as_user ? String(sec.run_as_user.value) : undefined);
  if (group !== undefined && user === undefined) {
    throw invalidArgument('security_context.run_as_group needs run_as_user or run_as_username');
  }
  if (user === undefined) return undefined;
  return group !== undefined ? `${user}:${group}` : user;
}

/** Docker `label=` options for a CRI SELinuxOption (Docker ignores them where SELinux is off). */
export function selinuxOpts(o: { user: string; role: string; type: string; level: string } | null | undefined): string[] {
  if (!o) return [];
  const out: string[] = [];
  if (o.user) out.push(`label=user:${o.user}`);
  if (o.role) out.push(`label=role:${o.role}`);
  if (o.type) out.push(`label=type:${o.type}`);
  if (o.level) out.push(`label=level:${o.level}`);
  return out;
}

/** Docker's signal names for the CRI enum (`SIGNAL_SIGTERM` -> `SIGTERM`). */
export function stopSignalOf(sig: string | undefined): string | undefined {
  return dockerStopSignal(sig);
}

/** PidMode for the container's namespace option (POD shares the pause container's). */
function pidMode(mode: string | undefined, sandboxId: string, targetId: string | undefined): string {
  switch (mode) {
    case 'NODE':
      return 'host';
    case 'CONTAINER':
      return '';
    case 'TARGET':
      if (!targetId) throw invalidArgument('namespace_options.target_id is required with pid TARGET');
      return `container:${targetId}`;
    default:
      return `container:${sandboxId}`;
  }
}

/** The start-up capability grant; without one (unit tests, older wiring) Docker's privileged mode is trusted. */
function grantOf(deps: Partial<Pick<ServiceDeps, 'capabilities' | 'engine'>>): CapabilityGrant {
  return deps.capabilities ?? computeCapabilityGrant(deps.engine?.current().apiVersion, undefined, 'not detected');
}

export interface SandboxContext {
  id: string;
  cgroupParent?: string;
  runtime?: string;
}

/**
 * The CRI log copy follows Docker's json-file (src/logs/): bounded by the --container-log-max-*
 * flags, uncompressed whatever daemon.json says (the copy reads plain json lines).
 */
export function jsonFileLogConfig(config: Partial<Pick<Config, 'containerLogMaxSize' | 'containerLogMaxFiles'>>): Docker.HostConfig['LogConfig'] {
  return {
    Type: 'json-file',
    Config: {
      'max-size': config.containerLogMaxSize ?? DEFAULTS.containerLogMaxSize,
      'max-file': String(config.containerLogMaxFiles ?? DEFAULTS.containerLogMaxFiles),
      compress: 'false',
    },
  };
}

/** Builds the create options; the caller adds name, labels and the image. */
export function dockerContainerSpec(
  config: ContainerConfig,
  sandbox: SandboxContext,
  deps: Pick<ServiceDeps, 'config' | 'oomScoreAdjFloor'> & Partial<Pick<ServiceDeps, 'engine' | 'capabilities'>>,
  /** Security options read from files beforehand (security.ts `resolveSeccomp`); required for a Localhost seccomp profile. */
  loaded: { seccomp?: string[] } = {},
): Docker.ContainerCreateOptions {
  const linux = config.linux;
  const sec = linux?.security_context;
  const ns = sec?.namespace_options;
  auditContainerConfig(config, deps.engine?.current().apiVersion);
  const privileged = sec?.privileged ?? false;
  const containerRef = `container ${config.metadata?.name ?? ''} in pod sandbox ${sandbox.id}`;
  const grant = grantOf(deps);
  const hostConfig: Docker.HostConfig = {
    // the pod's containers share the pause container's network and IPC namespaces
    NetworkMode: `container:${sandbox.id}`,
    IpcMode: `container:${sandbox.id}`,
    PidMode: pidMode(ns?.pid, sandbox.id, ns?.target_id),
    Binds: dockerBinds(config.mounts ?? [], deps),
    Devices: (config.devices ?? []).map((d) => ({
      PathOnHost: d.host_path,
      PathInContainer: d.container_path,
      CgroupPermissions: d.permissions || 'rwm',
    })),
    Privileged: false,
    ReadonlyRootfs: sec?.readonly_rootfs ?? false,
    ...(privileged ? {} : capabilityFields(sec?.capabilities, grant, containerRef)),
    GroupAdd: sec?.supplemental_groups?.length ? sec.supplemental_groups.map(String) : undefined,
    SecurityOpt: [
      ...(sec?.no_new_privs ? ['no-new-privileges'] : []),
      // a privileged container runs without seccomp and AppArmor whatever profile it names
      ...(privileged ? [] : (loaded.seccomp ?? seccompSecurityOpt(sec?.seccomp, sec?.seccomp_profile_path))),
      ...(privileged ? [] : apparmorSecurityOpt(sec?.apparmor, sec?.apparmor_profile)),
      ...selinuxOpts(sec?.selinux_options),
    ],
    LogConfig: jsonFileLogConfig(deps.config),
    RestartPolicy: { Name: 'no' },
    ...dockerResources(linux?.resources, deps.oomScoreAdjFloor, cgroupVersionOf(deps.engine)),
  };
  if (privileged) {
    const p = privilegedFields(grant, () => hostDevices());
    // a requested device keeps its own mapping; runc would refuse the path twice
    const requested: Docker.DeviceMapping[] = hostConfig.Devices ?? [];
    const asked = new Set(requested.map((d) => d.PathInContainer));
    const host: Docker.DeviceMapping[] = p.Devices ?? [];
    const devices = [...requested, ...host.filter((d) => !asked.has(d.PathInContainer))];
    Object.assign(hostConfig, { ...p, Devices: devices, SecurityOpt: [...(hostConfig.SecurityOpt ?? []), ...(p.SecurityOpt ?? [])] });
  } else {
    if (sec?.masked_paths?.length) hostConfig.MaskedPaths = sec.masked_paths;
    if (sec?.readonly_paths?.length) hostConfig.ReadonlyPaths = sec.readonly_paths;
  }
  const apiMounts = dockerMounts(config.mounts ?? []);
  if (apiMounts.length) hostConfig.Mounts = apiMounts;
  if (sandbox.cgroupParent) hostConfig.CgroupParent = sandbox.cgroupParent;
  if (sandbox.runtime) hostConfig.Runtime = sandbox.runtime;

  const spec: Docker.ContainerCreateOptions = {
    Image: config.image?.image,
    Entrypoint: config.command?.length ? config.command : undefined,
    Cmd: config.args?.length ? config.args : undefined,
    WorkingDir: config.working_dir || undefined,
    Env: (config.envs ?? []).map((e) => `${e.key}=${Buffer.isBuffer(e.value) ? e.value.toString('utf8') : String(e.value ?? '')}`),
    Tty: config.tty,
    OpenStdin: config.stdin,
    StdinOnce: config.stdin_once,
    AttachStdin: config.stdin,
    AttachStdout: true,
    AttachStderr: !config.tty,
    StopSignal: stopSignalOf(config.stop_signal),
    User: sec ? userSpec(sec) : undefined,
    HostConfig: hostConfig,
  };
  const hugepages = checkHugepageLimits(linux?.resources?.hugepage_limits);
  // StartContainer writes them to the container's hugetlb cgroup; the caller merges these labels
  if (hugepages.length > 0) spec.Labels = { [HUGEPAGE_LIMITS_LABEL]: JSON.stringify(hugepages) };
  return spec;
}
