import type * as Docker from '../docker/types';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { LogManager } from '../logs/log-manager';
import { mustFindContainer } from '../container/lookup';
import { STATUS_READ } from '../state/store';
import type { RunningFacts, RunningFactsCache } from '../container/running-facts';
import { checkId } from '../cri/validation';
import { sandboxIdOf, statusFromInspect } from '../container/status';
import type { ImageNames } from '../images/image-names';

/** The identity and hugepage limits of a running container's process; nothing for a stopped one. */
function factsOf(info: Docker.ContainerInspectInfo, running: RunningFactsCache): Promise<RunningFacts | undefined> {
  if (!info.State.Running || !info.State.Pid) return Promise.resolve(undefined);
  return running.get(info.Id, info.State.Pid);
}

/** How long ContainerStatus waits for an exited container's log copy to write its last line. */
const LOG_DRAIN_MS = 2000;

export function containerStatus(
  deps: ServiceDeps,
  running: RunningFactsCache,
  images: ImageNames,
  logs?: Pick<LogManager, 'drained'>,
) {
  return async (req: RuntimeReq<'ContainerStatus'>, ctx: CallContext): Promise<RuntimeRes<'ContainerStatus'>> => {
    const id = checkId('container_id', req.container_id);
    const info = await mustFindContainer(deps, id, STATUS_READ);
    ctx.annotate({ containerId: info.Id, podSandboxId: sandboxIdOf(info) });
    // a client that sees EXITED reads the log next (kubectl logs, critest): let the copy finish first
    if (info.State.Status === 'exited') await logs?.drained(info.Id, LOG_DRAIN_MS);
    // names are for people: Docker failing to say them leaves the image named as it was created
    const naming = images.of(info.Image).catch(() => undefined);
    const [facts, names] = await Promise.all([factsOf(info, running), naming]);
    const out: RuntimeRes<'ContainerStatus'> = {
      status: statusFromInspect(info, facts?.hugepages ?? [], names),
      info: {},
    };
    if (info.State.Running) out.status!.user = facts?.user ?? null;
    if (req.verbose) {
      out.info = {
        info: JSON.stringify({
          pid: info.State.Pid,
          sandboxID: sandboxIdOf(info),
          dockerName: info.Name,
          entrypoint: info.Config.Entrypoint,
          cmd: info.Config.Cmd,
          hostConfig: {
            NetworkMode: info.HostConfig.NetworkMode,
            PidMode: info.HostConfig.PidMode,
            IpcMode: info.HostConfig.IpcMode,
          },
        }),
      };
    }
    return out;
  };
}
