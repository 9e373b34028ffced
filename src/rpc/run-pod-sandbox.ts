import { promises as fsp } from 'fs';
import type * as Docker from '../docker/types';
import type { CheckpointPortMapping } from '../checkpoint/store';
import { crashPoint } from '../crash-points';
import { ensureImage } from '../docker/images';
import { engineForRuntime } from '../docker/engine-info';
import type { PortMappingSpec } from '../network/types';
import { DomainError, invalidArgument } from '../errors';
import { fromDockerError, isDockerNotFound } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from './deps';
import { ATTEMPT_LABEL, checkRequestLabels, CREATED_LABEL, ROOT_LABEL, RUNTIME_HANDLER_LABEL, makeLabels, POD_NAME_LABEL, POD_NAMESPACE_LABEL, POD_UID_LABEL, TYPE_LABEL, TYPE_SANDBOX } from '../labels';
import { sandboxName, withRandomSuffix } from '../cri/naming';
import { apparmorSecurityOpt, resolveSeccomp, seccompSecurityOpt } from '../cri/security';
import { checkEnums } from '../cri/enums';
import { auditSandboxConfig } from '../cri/field-audit';
import { selinuxOpts } from '../cri/container-config';
import { nowNanos } from '../time';
import { checkCgroupParent, checkLabelMap, checkName, checkResolvToken, checkSandboxMetadata, checkSysctls } from '../cri/validation';

type Request = RuntimeReq<'RunPodSandbox'>;
export type SandboxConfig = NonNullable<Request['config']>;

/** Undo steps collected while a sandbox is built; run newest first when a later step fails. */
class Rollback {
  private steps: Array<{ what: string; run: () => Promise<void> }> = [];
  add(what: string, run: () => Promise<void>): void {
    this.steps.push({ what, run });
  }
  async run(ctx: CallContext): Promise<void> {
    for (const step of this.steps.reverse()) {
      try {
        await step.run();
      } catch (err) {
        ctx.log.error(`rollback step failed: ${step.what}`, { error: (err as Error).message });
      }
    }
    this.steps = [];
  }
}

export function portMappingsOf(config: SandboxConfig): CheckpointPortMapping[] {
  return (config.port_mappings ?? []).map((p) => ({
    protocol: p.protocol.toLowerCase(),
    container_port: p.container_port,
    host_port: p.host_port,
    host_ip: p.host_ip || undefined,
  }));
}

/** Only mappings with a host port reach the portmap plugin (the rest are informational). */
export function cniPortMappings(mappings: CheckpointPortMapping[]): PortMappingSpec[] {
  return mappings
    .filter((p) => p.host_port > 0)
    .map((p) => ({
      hostPort: p.host_port,
      containerPort: p.container_port,
      protocol: (p.protocol === 'udp' || p.protocol === 'sctp' ? p.protocol : 'tcp') as PortMappingSpec['protocol'],
      hostIP: p.host_ip,
    }));
}

/** TCP hostPorts on crishim's own listeners are refused: the pod would capture their traffic (POST /exec/<token>). */
function checkOwnPorts(ownPorts: Set<number> | undefined, config: SandboxConfig): void {
  for (const [i, p] of (config.port_mappings ?? []).entries()) {
    if (p.host_port > 0 && ownPorts?.has(p.host_port) && (p.protocol ?? 'TCP') === 'TCP') {
      throw invalidArgument(`config.port_mappings[${i}].host_port ${p.host_port} is one of crishim's own listeners (streaming or metrics)`);
    }
  }
}

function validateConfig(req: Request): SandboxConfig {
  const config = req.config;
  if (!config) throw invalidArgument('config must be set');
  checkEnums('RunPodSandboxRequest', req);
  const meta = checkSandboxMetadata(config.metadata);
  checkLabelMap('config.labels', config.labels);
  checkRequestLabels('config.labels', config.labels, { [POD_NAME_LABEL]: meta.name, [POD_NAMESPACE_LABEL]: meta.namespace, [POD_UID_LABEL]: meta.uid });
  checkLabelMap('config.annotations', config.annotations);
  checkName('config.hostname', config.hostname, { required: false });
  for (const [i, p] of (config.port_mappings ?? []).entries()) {
    if (p.container_port < 0 || p.container_port > 65535 || p.host_port < 0 || p.host_port > 65535) {
      throw invalidArgument(`config.port_mappings[${i}]: port out of range (${p.container_port}:${p.host_port})`);
    }
    // portmap cannot forward to port 0: its ADD fails and so would every DEL after it
    if (p.host_port > 0 && p.container_port === 0) {
      throw invalidArgument(`config.port_mappings[${i}]: host_port ${p.host_port} needs a container_port in 1-65535`);
    }
  }
  checkDnsConfig(config.dns_config);
  checkCgroupParent('config.linux.cgroup_parent', config.linux?.cgroup_parent);
  checkSysctls('config.linux.sysctls', config.linux?.sysctls);
  auditSandboxConfig(config);
  return config;
}

/** Every DNS entry becomes a resolv.conf token verbatim (see writeResolvConf). */
export function checkDnsConfig(dns: SandboxConfig['dns_config']): void {
  if (!dns) return;
  (dns.servers ?? []).forEach((v, i) => checkResolvToken(`config.dns_config.servers[${i}]`, v));
  (dns.searches ?? []).forEach((v, i) => checkResolvToken(`config.dns_config.searches[${i}]`, v));
  (dns.options ?? []).forEach((v, i) => checkResolvToken(`config.dns_config.options[${i}]`, v));
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

async function checkRuntimeHandler(deps: ServiceDeps, handler: string): Promise<string | undefined> {
  if (!handler) return undefined;
  // a runtime added by a dockerd reload since the last refresh is looked up once more before refusing
  const engine = await engineForRuntime(deps.engine, handler);
  if (!engine.runtimes.includes(handler)) {
    throw invalidArgument(`unknown runtime handler ${JSON.stringify(handler)}; docker has: ${engine.runtimes.join(', ') || 'none'}`);
  }
  return handler;
}

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

async function createPauseContainer(
  deps: ServiceDeps,
  ctx: CallContext,
  opts: Docker.ContainerCreateOptions,
): Promise<Docker.Container> {
  // No abort signal: a create cancelled in flight may still happen in Docker, and then we
  // would not know the id to roll back. Cancellation is checked once the id is known.
  try {
    return await deps.docker.createContainer({ ...opts });
  } catch (err) {
    // a leftover with the same name (e.g. from a crash): take a fresh name, as dockershim does
    if ((err as { statusCode?: number }).statusCode === 409 && opts.name) {
      ctx.log.warn('sandbox name taken; retrying with a random suffix', { name: opts.name });
      return await deps.docker.createContainer({ ...opts, name: withRandomSuffix(opts.name) });
    }
    throw err;
  }
}

export function runPodSandbox(deps: ServiceDeps) {
  /** Sandbox images known to be present, so the common path skips an inspect round trip. */
  const sandboxImageSeen = new Set<string>();
  return async (req: Request, ctx: CallContext): Promise<RuntimeRes<'RunPodSandbox'>> => {
    const config = validateConfig(req);
    checkOwnPorts(deps.ownPorts, config);
    const meta = checkSandboxMetadata(config.metadata);
    const runtime = await checkRuntimeHandler(deps, req.runtime_handler);
    checkOwnPorts(deps.ownPorts, config);
    const hostNetwork = config.linux?.security_context?.namespace_options?.network === 'NODE';
    const image = deps.config.podInfraContainerImage;
    ctx.annotate({ pod: `${meta.namespace}/${meta.name}` });
    const rollback = new Rollback();
    const step = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
      try {
        return await fn();
      } catch (err) {
        const e = fromDockerError(err, `RunPodSandbox ${meta.namespace}/${meta.name}: ${what}`);
        ctx.log.error(e.message);
        await rollback.run(ctx);
        throw e;
      }
    };

    // everything derived from the request is built (and so checked) before the first side effect
    const sec = config.linux?.security_context;
    const seccomp = await resolveSeccomp(sec?.seccomp, sec?.seccomp_profile_path);
    const createdAt = nowNanos();
    const labels = makeLabels(
      config.labels,
      config.annotations,
      {
        [TYPE_LABEL]: TYPE_SANDBOX,
        [ATTEMPT_LABEL]: String(meta.attempt),
        [CREATED_LABEL]: createdAt,
        [ROOT_LABEL]: deps.config.rootDirectory,
        ...(runtime ? { [RUNTIME_HANDLER_LABEL]: runtime } : {}),
      },
      { [POD_NAME_LABEL]: meta.name, [POD_NAMESPACE_LABEL]: meta.namespace, [POD_UID_LABEL]: meta.uid },
    );
    const createOpts: Docker.ContainerCreateOptions = { name: sandboxName(meta), ...pauseContainerSpec(deps, config, image, labels, runtime, seccomp) };
    const portMappings = portMappingsOf(config);

    // (a) the sandbox image: checked once, then trusted until Docker says it is gone
    const ensure = (): Promise<void> => ensureImage(deps.docker, image, { signal: ctx.signal, logger: ctx.log });
    if (!sandboxImageSeen.has(image)) {
      await step(`ensure sandbox image ${image}`, ensure);
      sandboxImageSeen.add(image);
    }

    // (b) the pause container
    const container = await step('create pause container', async () => {
      try {
        return await createPauseContainer(deps, ctx, createOpts);
      } catch (err) {
        if (!isDockerNotFound(err)) throw err;
        // the image went away since we last looked: pull it again
        sandboxImageSeen.delete(image);
        await ensure();
        sandboxImageSeen.add(image);
        return createPauseContainer(deps, ctx, createOpts);
      }
    });
    const id = container.id;
    ctx.annotate({ podSandboxId: id });
    rollback.add(`remove pause container ${id}`, () => container.remove({ force: true, v: true }));
    // from here on every step is undone if the client gave up: the undo runs without its signal
    const checkCancelled = (): Promise<void> => (ctx.signal.aborted ? Promise.reject(new DomainError('cancelled', 'cancelled by the client')) : Promise.resolve());
    await step('after create', checkCancelled);

    // (c) the checkpoint: what teardown needs if the container disappears
    crashPoint('sandbox:after-create');
    const checkpoint = {
      name: meta.name,
      namespace: meta.namespace,
      data: { port_mappings: portMappings, host_network: hostNetwork },
      crishim: {
        sandbox_id: id,
        uid: meta.uid,
        attempt: meta.attempt,
        created_at: createdAt,
        runtime_handler: req.runtime_handler || undefined,
        // host-network pods have no networking step that a crash could leave half done
        phase: hostNetwork ? ('ready' as const) : ('creating' as const),
        labels: config.labels,
        annotations: config.annotations,
      },
    };
    await step('write checkpoint', () => deps.checkpoints.write(id, checkpoint));
    rollback.add(`remove checkpoint ${id}`, () => deps.checkpoints.remove(id));
    crashPoint('sandbox:after-checkpoint');

    // (d) start it
    // no signal either: a start aborted in flight races the rollback's remove in Docker
    await step('start pause container', () => container.start());
    await step('after start', checkCancelled);
    crashPoint('sandbox:after-start');
    // (e) pod networking, and DNS: both need the running container's details
    const dns = config.dns_config;
    const needsDns = Boolean(dns && (dns.servers.length || dns.searches.length || dns.options.length));
    const info = !hostNetwork || needsDns ? await step('inspect pause container', () => container.inspect()) : undefined;
    if (info && needsDns) await step('write resolv.conf', () => writeResolvConf(info.ResolvConfPath, dns));
    if (info && !hostNetwork) {
      const pid = info.State.Pid;
      if (!pid) {
        await rollback.run(ctx);
        throw new DomainError('internal', `RunPodSandbox ${meta.namespace}/${meta.name}: pause container ${id} exited right after start`);
      }
      const netReq = {
        podName: meta.name,
        podNamespace: meta.namespace,
        podUid: meta.uid,
        sandboxId: id,
        netnsPath: `/proc/${pid}/ns/net`,
        portMappings: cniPortMappings(portMappings),
      };
      await step(`set up pod network (${deps.network.name})`, () => deps.network.setUpPod({ ...netReq, signal: ctx.signal }));
      // no signal: a cancelled call is a reason to undo, and the undo must still run (releases the IP)
      rollback.add(`tear down pod network of ${id}`, () => deps.network.tearDownPod(netReq));
    }
    crashPoint('sandbox:after-network');
    // from here on a restart keeps the sandbox instead of undoing it
    if (!hostNetwork) {
      await step('mark checkpoint ready', () => deps.checkpoints.write(id, { ...checkpoint, crishim: { ...checkpoint.crishim, phase: 'ready' } }));
    }
    ctx.log.info('pod sandbox is ready', { podSandboxId: id });
    return { pod_sandbox_id: id };
  };
}
