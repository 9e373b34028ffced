import { failedPrecondition } from '../errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { checkId } from '../cri/validation';
import type { ExecDeps } from '../service-deps';
import { checkStreams } from '../cri/stream-flags';
import { mustFindRunningContainer } from '../container/lookup';

export function attachRpc(deps: ExecDeps) {
  return async (req: RuntimeReq<'Attach'>, ctx: CallContext): Promise<RuntimeRes<'Attach'>> => {
    const id = checkId('container_id', req.container_id);
    checkStreams(req);
    const info = await mustFindRunningContainer(deps, id, ctx);
    if (req.stdin && !info.Config.OpenStdin) {
      throw failedPrecondition(`container ${info.Id} was not created with stdin open; cannot attach stdin`);
    }
    const url = deps.streaming.issueUrl({
      kind: 'attach',
      containerId: info.Id,
      tty: req.tty,
      stdin: req.stdin,
      stdout: req.stdout,
      stderr: req.stderr,
    });
    return { url };
  };
}
