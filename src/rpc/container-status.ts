import type * as Docker from '../docker/types';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import type { LogManager } from '../logs/log-manager';
import type { HugepageLimit } from '../cri/container-resources';
import { mustFindContainer } from '../container/lookup';
import type { HugetlbCgroup } from '../cgroups/hugetlb';
import { checkId } from '../cri/validation';
import { containerUser } from '../cri/container-user';
import { sandboxIdOf, statusFromInspect } from '../container/status';

/** What the running container's hugetlb cgroup enforces; nothing for a stopped one. */
async function appliedHugepages(info: Docker.ContainerInspectInfo, hugetlb: HugetlbCgroup): Promise<HugepageLimit[]> {
  if (!info.State.Running || !info.State.Pid) return [];
  return hugetlb.read(info.State.Pid, info.Id).catch(() => []);
}

/** How long ContainerStatus waits for an exited container's log copy to write its last line. */
const LOG_DRAIN_MS = 2000;

export function containerStatus(deps: ServiceDeps, hugetlb: HugetlbCgroup, logs?: Pick<LogManager, 'drained'>) {
  return async (req: RuntimeReq<'ContainerStatus'>, ctx: CallContext): Promise<RuntimeRes<'ContainerStatus'>> => {
    const id = checkId('container_id', req.container_id);
    const info = await mustFindContainer(deps, id);
    ctx.annotate({ containerId: info.Id, podSandboxId: sandboxIdOf(info) });
    // a client that sees EXITED reads the log next (kubectl logs, critest): let the copy finish first
    if (info.State.Status === 'exited') await logs?.drained(info.Id, LOG_DRAIN_MS);
    const out: RuntimeRes<'ContainerStatus'> = {
      status: statusFromInspect(info, await appliedHugepages(info, hugetlb)),
      info: {},
    };
    if (info.State.Running) out.status!.user = containerUser(info.State.Pid, info.Id) ?? null;
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
