import * as fs from 'fs';
import * as path from 'path';
import type Docker from 'dockerode';
import { invalidArgument } from '../server/errors';
import type { RuntimeReq } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { apparmorSecurityOpt, seccompSecurityOpt } from './security';

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

/** Docker resource fields for CRI LinuxContainerResources (used by create and update). */
export function dockerResources(r: Resources | null | undefined, oomFloor: number): Docker.HostConfig {
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
  if (shares) out.CpuShares = shares;
  if (quota) out.CpuQuota = quota;
  if (period) out.CpuPeriod = period;
  if (memory) {
    out.Memory = memory;
    // Docker refuses a memory limit above the current swap limit; keep them together
    out.MemorySwap = swap || memory;
  }
  if (r.cpuset_cpus) out.CpusetCpus = r.cpuset_cpus;
  if (r.cpuset_mems) out.CpusetMems = r.cpuset_mems;
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

/** `host:container[:opts]` bind specs; refuses missing sources and crishim's own state. */
export function dockerBinds(mounts: Mount[], deps: Pick<ServiceDeps, 'config'>): string[] {
  const protectedDirs = [path.resolve(deps.config.rootDirectory)];
  return mounts.map((m, i) => {
    const field = `config.mounts[${i}]`;
    if (!m.container_path || !path.isAbsolute(m.container_path)) throw invalidArgument(`${field}.container_path must be an absolute path`);
    if (!m.host_path) throw invalidArgument(`${field}.host_path must be set`);
    const host = path.resolve(m.host_path);
    if (protectedDirs.some((d) => host === d || host.startsWith(d + path.sep))) {
      throw invalidArgument(`${field}.host_path ${host} is crishim's own state directory and cannot be mounted`);
    }
    if (!fs.existsSync(host)) throw invalidArgument(`${field}.host_path ${host} does not exist`);
    if (host.includes(':') || m.container_path.includes(':')) throw invalidArgument(`${field}: paths with ':' are not supported by Docker binds`);
    const opts = [m.readonly ? 'ro' : 'rw'];
    if (m.selinux_relabel) opts.push('Z');
    const prop = PROPAGATION[m.propagation] ?? '';
    if (prop) opts.push(prop);
    return `${host}:${m.container_path}:${opts.join(',')}`;
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

function selinuxOpts(o: { user: string; role: string; type: string; level: string } | null | undefined): string[] {
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
  return sig && sig !== 'SIGNAL_RUNTIME_DEFAULT' ? sig.replace(/^SIGNAL_/, '') : undefined;
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

export interface SandboxContext {
  id: string;
  cgroupParent?: string;
  runtime?: string;
}

/** Builds the create options; the caller adds name, labels and the image. */
export function dockerContainerSpec(
  config: ContainerConfig,
  sandbox: SandboxContext,
  deps: Pick<ServiceDeps, 'config' | 'oomScoreAdjFloor'>,
): Docker.ContainerCreateOptions {
  const linux = config.linux;
  const sec = linux?.security_context;
  const ns = sec?.namespace_options;
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
    Privileged: sec?.privileged ?? false,
    ReadonlyRootfs: sec?.readonly_rootfs ?? false,
    CapAdd: sec?.capabilities?.add_capabilities?.length ? sec.capabilities.add_capabilities : undefined,
    CapDrop: sec?.capabilities?.drop_capabilities?.length ? sec.capabilities.drop_capabilities : undefined,
    GroupAdd: sec?.supplemental_groups?.length ? sec.supplemental_groups.map(String) : undefined,
    SecurityOpt: [
      ...(sec?.no_new_privs ? ['no-new-privileges'] : []),
      ...seccompSecurityOpt(sec?.seccomp, sec?.seccomp_profile_path),
      ...apparmorSecurityOpt(sec?.apparmor, sec?.apparmor_profile),
      ...selinuxOpts(sec?.selinux_options),
    ],
    // the CRI log copier reads Docker's json-file log; bound it, the CRI file is the record
    LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
    RestartPolicy: { Name: 'no' },
    ...dockerResources(linux?.resources, deps.oomScoreAdjFloor),
  };
  if (sec?.masked_paths?.length) hostConfig.MaskedPaths = sec.masked_paths;
  if (sec?.readonly_paths?.length) hostConfig.ReadonlyPaths = sec.readonly_paths;
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
  return spec;
}
