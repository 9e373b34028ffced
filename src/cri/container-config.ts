import * as fs from 'fs';
import * as path from 'path';
import type * as Docker from '../docker/types';
import { invalidArgument } from '../errors';
import type { RuntimeReq } from '../server/rpc';
import { DEFAULTS, type Config } from '../config';
import type { ServiceDeps } from '../service-deps';
import { apparmorSecurityOpt, seccompSecurityOpt } from './security';
import { HUGEPAGE_LIMITS_LABEL } from '../labels';
import { isWithin } from '../logging/safe-path';
import { computeCapabilityGrant, type CapabilityGrant } from '../docker/capabilities';
import { capabilityFields, hostDevices, privilegedFields } from './privileged';
import { dockerStopSignal } from './stop-signal';
import { cgroupVersionOf, checkHugepageLimits, dockerResources } from './container-resources';
import { auditContainerConfig, dockerMounts, needsMountApi } from './field-audit';

/** Translation of a CRI ContainerConfig into Docker create options (no I/O but path checks). */

export type ContainerConfig = NonNullable<RuntimeReq<'CreateContainer'>['config']>;
type Mount = ContainerConfig['mounts'][number];

const PROPAGATION: Record<string, string> = {
  PROPAGATION_PRIVATE: '',
  PROPAGATION_HOST_TO_CONTAINER: 'rslave',
  PROPAGATION_BIDIRECTIONAL: 'rshared',
};

/** Absolute host path of the CRI log, kept inside the pod's log directory. */
export function resolveLogPath(logDirectory: string | undefined, logPath: string | undefined): string {
  if (!logDirectory || !logPath) return '';
  if (!path.isAbsolute(logDirectory))
    throw invalidArgument(`sandbox_config.log_directory ${JSON.stringify(logDirectory)} must be absolute`);
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
    if (!m.container_path || !path.isAbsolute(m.container_path))
      throw invalidArgument(`${field}.container_path must be an absolute path`);
    if (!m.host_path) throw invalidArgument(`${field}.host_path must be set`);
    const host = path.resolve(m.host_path);
    if (protectedDirs.some((d) => host === d || host.startsWith(d + path.sep))) {
      throw invalidArgument(`${field}.host_path ${host} is crishim's own state directory and cannot be mounted`);
    }
    if (!fs.existsSync(host)) throw invalidArgument(`${field}.host_path ${host} does not exist`);
    // a symlink to the state directory is the state directory: check (and hand Docker) the real path
    const real = realMountSource(host);
    if (protectedDirs.some((d) => isWithin(real, realMountSource(d)))) {
      throw invalidArgument(
        `${field}.host_path ${host} resolves to ${real}, inside crishim's own state directory, and cannot be mounted`,
      );
    }
    if (host.includes(':') || m.container_path.includes(':'))
      throw invalidArgument(`${field}: paths with ':' are not supported by Docker binds`);
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
export function selinuxOpts(
  o: { user: string; role: string; type: string; level: string } | null | undefined,
): string[] {
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
export function jsonFileLogConfig(
  config: Partial<Pick<Config, 'containerLogMaxSize' | 'containerLogMaxFiles'>>,
): Docker.HostConfig['LogConfig'] {
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
    Object.assign(hostConfig, {
      ...p,
      Devices: devices,
      SecurityOpt: [...(hostConfig.SecurityOpt ?? []), ...(p.SecurityOpt ?? [])],
    });
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
    Env: (config.envs ?? []).map(
      (e) => `${e.key}=${Buffer.isBuffer(e.value) ? e.value.toString('utf8') : String(e.value ?? '')}`,
    ),
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
