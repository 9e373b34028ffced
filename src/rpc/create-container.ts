import { failedPrecondition, invalidArgument, notFound } from '../errors';
import { fromDockerError } from '../docker/errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { dockerContainerSpec } from '../cri/container-config';
import { checkedLogPath } from '../cri/log-path';
import { resolveSeccomp } from '../cri/security';
import {
  ATTEMPT_LABEL,
  checkRequestLabels,
  CONTAINER_LOGPATH_LABEL,
  CONTAINER_NAME_LABEL,
  CREATED_LABEL,
  makeLabels,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
  ROOT_LABEL,
  SANDBOX_ID_LABEL,
  TYPE_CONTAINER,
  TYPE_LABEL,
  USER_IMAGE_LABEL,
} from '../labels';
import { containerName } from '../cri/naming';
import { reclaimOwnLeftover } from '../container/create-named';
import { findSandbox, recordMetadata } from '../sandbox/lookup';
import { checkEnums } from '../cri/enums';
import { nowNanos } from '../time';
import { checkId, checkLabelMap, checkName } from '../cri/validation';

export function createContainer(deps: ServiceDeps) {
  return async (req: RuntimeReq<'CreateContainer'>, ctx: CallContext): Promise<RuntimeRes<'CreateContainer'>> => {
    const sandboxId = checkId('pod_sandbox_id', req.pod_sandbox_id);
    const config = req.config;
    if (!config) throw invalidArgument('config must be set');
    if (!config.metadata) throw invalidArgument('config.metadata must be set');
    checkEnums('CreateContainerRequest', req);
    const name = checkName('config.metadata.name', config.metadata.name);
    const attempt = config.metadata.attempt ?? 0;
    if (!config.image?.image) throw invalidArgument('config.image.image must be set');
    checkLabelMap('config.labels', config.labels);
    checkLabelMap('config.annotations', config.annotations);

    const sandbox = await findSandbox(deps, sandboxId);
    if (!sandbox) throw notFound(`pod sandbox ${sandboxId}`);
    ctx.annotate({ podSandboxId: sandbox.id });
    if (!sandbox.container?.State.Running) {
      throw failedPrecondition(`pod sandbox ${sandbox.id} is not ready; cannot create container ${name} in it`);
    }
    const pod = recordMetadata(sandbox);
    const identity = {
      [CONTAINER_NAME_LABEL]: name,
      [POD_NAME_LABEL]: pod.name,
      [POD_NAMESPACE_LABEL]: pod.namespace,
      [POD_UID_LABEL]: pod.uid,
    };
    checkRequestLabels('config.labels', config.labels, identity);
    const logPath = await checkedLogPath(deps, req.sandbox_config?.log_directory, config.log_path);

    const sec = config.linux?.security_context;
    const seccomp = await resolveSeccomp(sec?.seccomp, sec?.seccomp_profile_path);
    const spec = dockerContainerSpec(
      config,
      {
        id: sandbox.id,
        cgroupParent: sandbox.container.HostConfig.CgroupParent || undefined,
        runtime: sandbox.checkpoint?.crishim?.runtime_handler || undefined,
      },
      deps,
      { seccomp },
    );
    const labels = makeLabels(
      config.labels,
      config.annotations,
      {
        [TYPE_LABEL]: TYPE_CONTAINER,
        [SANDBOX_ID_LABEL]: sandbox.id,
        [ATTEMPT_LABEL]: String(attempt),
        [CREATED_LABEL]: nowNanos(),
        [ROOT_LABEL]: deps.config.rootDirectory,
        ...(logPath ? { [CONTAINER_LOGPATH_LABEL]: logPath } : {}),
        ...(config.image.user_specified_image ? { [USER_IMAGE_LABEL]: config.image.user_specified_image } : {}),
      },
      identity,
    );
    const dockerName = containerName(name, attempt, pod);
    let id: string;
    try {
      id = await deps.docker.createContainer(
        { ...spec, name: dockerName, Labels: { ...spec.Labels, ...labels } },
        { signal: ctx.signal, onConflict: reclaimOwnLeftover(deps, ctx, { sandboxId: sandbox.id, name, attempt }) },
      );
    } catch (err) {
      throw fromDockerError(err, `CreateContainer ${name} in pod sandbox ${sandbox.id}`);
    }
    deps.crashAt?.('container:after-create');
    ctx.annotate({ containerId: id });
    ctx.log.info('container created', { image: config.image.image });
    return { container_id: id };
  };
}
