import type * as Docker from '../docker/types';
import { engineForRuntime } from '../docker/engine-info';
import { cgroupDriverFor, dockerCgroupParent } from '../cgroups/cgroup-parent';
import { DomainError, invalidArgument, isNotFound, notFound } from '../errors';
import { findAnyContainer } from '../state/lookup';
import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { SandboxImageCheck } from '../sandbox/image-check';
import { pauseContainerSpec, writeResolvConf, type SandboxConfig } from '../sandbox/pause-container';
import { cniPortMappings, portMappingsOf } from '../sandbox/port-mappings';
import {
  ATTEMPT_LABEL,
  checkRequestLabels,
  CREATED_LABEL,
  ROOT_LABEL,
  RUNTIME_HANDLER_LABEL,
  makeLabels,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
  TYPE_LABEL,
  TYPE_SANDBOX,
} from '../labels';
import { sandboxName, withRandomSuffix } from '../cri/naming';
import { resolveSeccomp } from '../cri/security';
import { checkEnums } from '../cri/enums';
import { auditSandboxConfig } from '../cri/field-audit';
import { nowNanos } from '../time';
import {
  checkCgroupParent,
  checkLabelMap,
  checkName,
  checkResolvToken,
  checkSandboxMetadata,
  checkSysctls,
} from '../cri/validation';

type Request = RuntimeReq<'RunPodSandbox'>;

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

/** TCP hostPorts on crishim's own listeners are refused: the pod would capture their traffic (POST /exec/<token>). */
function checkOwnPorts(ownPorts: Set<number> | undefined, config: SandboxConfig): void {
  for (const [i, p] of (config.port_mappings ?? []).entries()) {
    if (p.host_port > 0 && ownPorts?.has(p.host_port) && (p.protocol ?? 'TCP') === 'TCP') {
      throw invalidArgument(
        `config.port_mappings[${i}].host_port ${p.host_port} is one of crishim's own listeners (streaming or metrics)`,
      );
    }
  }
}

function validateConfig(req: Request): SandboxConfig {
  const config = req.config;
  if (!config) throw invalidArgument('config must be set');
  checkEnums('RunPodSandboxRequest', req);
  const meta = checkSandboxMetadata(config.metadata);
  checkLabelMap('config.labels', config.labels);
  checkRequestLabels('config.labels', config.labels, {
    [POD_NAME_LABEL]: meta.name,
    [POD_NAMESPACE_LABEL]: meta.namespace,
    [POD_UID_LABEL]: meta.uid,
  });
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

/** The request with its cgroup parent in the form Docker's cgroup driver takes (cgroup-parent.ts). */
async function withDockerCgroupParent(deps: ServiceDeps, config: SandboxConfig): Promise<SandboxConfig> {
  const linux = config.linux;
  const given = linux?.cgroup_parent ?? '';
  const driver = await cgroupDriverFor(deps.engine, given);
  const parent = dockerCgroupParent('config.linux.cgroup_parent', given, driver);
  return linux && parent !== given ? { ...config, linux: { ...linux, cgroup_parent: parent } } : config;
}

async function checkRuntimeHandler(deps: ServiceDeps, handler: string): Promise<string | undefined> {
  if (!handler) return undefined;
  // a runtime added by a dockerd reload since the last refresh is looked up once more before refusing
  const engine = await engineForRuntime(deps.engine, handler);
  if (!engine.runtimes.includes(handler)) {
    throw invalidArgument(
      `unknown runtime handler ${JSON.stringify(handler)}; docker has: ${engine.runtimes.join(', ') || 'none'}`,
    );
  }
  return handler;
}

/** The started pause container as the view (else Docker) knows it: gone already is an error. */
async function mustFindPause(deps: ServiceDeps, id: string): Promise<Docker.ContainerInspectInfo> {
  const info = await findAnyContainer(deps, id);
  if (!info) throw notFound(`pause container ${id}`);
  return info;
}

async function createPauseContainer(
  deps: ServiceDeps,
  ctx: CallContext,
  opts: Docker.ContainerCreateOptions,
): Promise<string> {
  // No abort signal: a create cancelled in flight may still happen in Docker, and then we
  // would not know the id to roll back. Cancellation is checked once the id is known.
  return deps.docker.createContainer(opts, {
    // a leftover with the same name (e.g. from a crash): take a fresh name, as dockershim does
    onConflict: {
      kind: 'suffix',
      rename: withRandomSuffix,
      onRetry: () => ctx.log.warn('sandbox name taken; retrying with a random suffix', { name: opts.name }),
    },
  });
}

export function runPodSandbox(deps: ServiceDeps) {
  const sandboxImage = new SandboxImageCheck(deps);
  return async (req: Request, ctx: CallContext): Promise<RuntimeRes<'RunPodSandbox'>> => {
    const requested = validateConfig(req);
    checkOwnPorts(deps.ownPorts, requested);
    const meta = checkSandboxMetadata(requested.metadata);
    const runtime = await checkRuntimeHandler(deps, req.runtime_handler);
    const config = await withDockerCgroupParent(deps, requested);
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
    const createOpts: Docker.ContainerCreateOptions = {
      name: sandboxName(meta),
      ...pauseContainerSpec(deps, config, image, labels, runtime, seccomp),
    };
    const portMappings = portMappingsOf(config);

    // (a) the sandbox image: checked once, then trusted until Docker says it is gone
    const ensure = (): Promise<void> => sandboxImage.ensure(image, { signal: ctx.signal, logger: ctx.log });
    await step(`ensure sandbox image ${image}`, ensure);

    // (b) the pause container
    const id = await step('create pause container', async () => {
      try {
        return await createPauseContainer(deps, ctx, createOpts);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // the image went away since we last looked: pull it again
        sandboxImage.forget(image);
        await ensure();
        return createPauseContainer(deps, ctx, createOpts);
      }
    });
    ctx.annotate({ podSandboxId: id });
    rollback.add(`remove pause container ${id}`, () => deps.docker.removeContainer(id, { force: true, volumes: true }));
    // from here on every step is undone if the client gave up: the undo runs without its signal
    const checkCancelled = (): Promise<void> =>
      ctx.signal.aborted ? Promise.reject(new DomainError('cancelled', 'cancelled by the client')) : Promise.resolve();
    await step('after create', checkCancelled);

    // (c) the checkpoint: what teardown needs if the container disappears
    deps.crashAt?.('sandbox:after-create');
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
    // the view's inspect of the created container (already asked for) lands before the start, which
    // holds Docker's inspect for seconds: status reads meanwhile answer from it (ReadOptions)
    const known = deps.state?.get(id).catch(() => undefined);
    await step('write checkpoint', () => deps.checkpoints.write(id, checkpoint));
    rollback.add(`remove checkpoint ${id}`, () => deps.checkpoints.remove(id));
    await known;
    deps.crashAt?.('sandbox:after-checkpoint');

    // (d) start it
    // no signal either: a start aborted in flight races the rollback's remove in Docker
    await step('start pause container', () => deps.docker.startContainer(id));
    await step('after start', checkCancelled);
    deps.crashAt?.('sandbox:after-start');
    // (e) pod networking, and DNS: both need the running container's details
    const dns = config.dns_config;
    const needsDns = Boolean(dns && (dns.servers.length || dns.searches.length || dns.options.length));
    // the view is re-inspecting the started container already: its answer, not a second inspect
    const info =
      !hostNetwork || needsDns ? await step('inspect pause container', () => mustFindPause(deps, id)) : undefined;
    if (info && needsDns) await step('write resolv.conf', () => writeResolvConf(info.ResolvConfPath, dns));
    if (info && !hostNetwork) {
      const pid = info.State.Pid;
      if (!pid) {
        await rollback.run(ctx);
        throw new DomainError(
          'internal',
          `RunPodSandbox ${meta.namespace}/${meta.name}: pause container ${id} exited right after start`,
        );
      }
      const netReq = {
        podName: meta.name,
        podNamespace: meta.namespace,
        podUid: meta.uid,
        sandboxId: id,
        netnsPath: `/proc/${pid}/ns/net`,
        portMappings: cniPortMappings(portMappings),
      };
      await step(`set up pod network (${deps.network.name})`, () =>
        deps.network.setUpPod({ ...netReq, signal: ctx.signal }),
      );
      // no signal: a cancelled call is a reason to undo, and the undo must still run (releases the IP)
      rollback.add(`tear down pod network of ${id}`, () => deps.network.tearDownPod(netReq));
    }
    deps.crashAt?.('sandbox:after-network');
    // from here on a restart keeps the sandbox instead of undoing it
    if (!hostNetwork) {
      await step('mark checkpoint ready', () =>
        deps.checkpoints.write(id, { ...checkpoint, crishim: { ...checkpoint.crishim, phase: 'ready' } }),
      );
    }
    ctx.log.info('pod sandbox is ready', { podSandboxId: id });
    return { pod_sandbox_id: id };
  };
}
