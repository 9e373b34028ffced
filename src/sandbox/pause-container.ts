import { promises as fsp } from 'fs';
import type * as Docker from '../docker/types';
import type { RuntimeReq } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { apparmorSecurityOpt, seccompSecurityOpt } from '../cri/security';
import { selinuxOpts } from '../cri/container-config';

/** The sandbox part of a RunPodSandbox request. */
export type SandboxConfig = NonNullable<RuntimeReq<'RunPodSandbox'>['config']>;

/** Writes the pod's resolv.conf the way dockershim did: into the file Docker bind-mounts. */
export async function writeResolvConf(path: string, dns: SandboxConfig['dns_config']): Promise<void> {
  if (!dns || (dns.servers.length === 0 && dns.searches.length === 0 && dns.options.length === 0)) return;
  const lines = [
    ...dns.servers.map((s) => `nameserver ${s}`),
    ...(dns.searches.length ? [`search ${dns.searches.join(' ')}`] : []),
    ...(dns.options.length ? [`options ${dns.options.join(' ')}`] : []),
  ];
  await fsp.writeFile(path, lines.join('\n') + '\n');
}

/** Docker host config for the pause container; everything pod-wide lives here. */
export function hostConfigFor(
  deps: Pick<ServiceDeps, 'sandboxOomScoreAdj'>,
  config: SandboxConfig,
  runtime: string | undefined,
  /** From security.ts `resolveSeccomp`; required for a Localhost seccomp profile. */
  seccomp?: string[],
): Docker.HostConfig {
  const linux = config.linux;
  const sec = linux?.security_context;
  const ns = sec?.namespace_options;
  const hostNetwork = ns?.network === 'NODE';
  const hc: Docker.HostConfig = {
    // CNI configures the pod's own netns; Docker must not attach a network of its own
    NetworkMode: hostNetwork ? 'host' : 'none',
    // containers of the pod join this IPC namespace, so it must be shareable
    IpcMode: ns?.ipc === 'NODE' ? 'host' : 'shareable',
    PidMode: ns?.pid === 'NODE' ? 'host' : '',
    OomScoreAdj: deps.sandboxOomScoreAdj,
    ReadonlyRootfs: sec?.readonly_rootfs ?? false,
    SecurityOpt: [
      ...(seccomp ?? seccompSecurityOpt(sec?.seccomp, sec?.seccomp_profile_path)),
      ...apparmorSecurityOpt(sec?.apparmor, undefined),
      ...selinuxOpts(sec?.selinux_options),
    ],
    RestartPolicy: { Name: 'no' },
  };
  if (hostNetwork) hc.UTSMode = 'host';
  if (linux?.cgroup_parent) hc.CgroupParent = linux.cgroup_parent;
  if (linux?.sysctls && Object.keys(linux.sysctls).length > 0) hc.Sysctls = linux.sysctls;
  if (sec?.supplemental_groups?.length) hc.GroupAdd = sec.supplemental_groups.map(String);
  if (runtime) hc.Runtime = runtime;
  // Privileged is not passed on: the pause process never needs it, and hosts that
  // refuse privileged containers (like these) would fail every privileged pod.
  return hc;
}

/** `uid[:gid]` the pause process runs as (the pod's run_as_user/run_as_group). */
export function userOf(config: SandboxConfig): string | undefined {
  const sec = config.linux?.security_context;
  if (!sec?.run_as_user) return undefined;
  const uid = String(sec.run_as_user.value);
  return sec.run_as_group ? `${uid}:${String(sec.run_as_group.value)}` : uid;
}

/** Create options of the pause container, but its name. */
export function pauseContainerSpec(
  deps: Pick<ServiceDeps, 'sandboxOomScoreAdj'>,
  config: SandboxConfig,
  image: string,
  labels: Record<string, string>,
  runtime: string | undefined,
  seccomp?: string[],
): Docker.ContainerCreateOptions {
  const hostNetwork = config.linux?.security_context?.namespace_options?.network === 'NODE';
  return {
    Image: image,
    Labels: labels,
    // a host-network pod has the node's hostname (UTSMode host)
    Hostname: hostNetwork ? undefined : config.hostname || undefined,
    User: userOf(config),
    HostConfig: hostConfigFor(deps, config, runtime, seccomp),
  };
}
