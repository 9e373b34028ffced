import { invalidArgument } from '../errors';
import type { CallContext, RuntimeReq, RuntimeRes } from '../server/rpc';
import { checkId } from '../cri/validation';
import type { ExecDeps } from '../service-deps';
import { checkStreams } from '../cri/stream-flags';
import { mustFindRunningContainer } from '../container/lookup';

export function execRpc(deps: ExecDeps) {
  return async (req: RuntimeReq<'Exec'>, ctx: CallContext): Promise<RuntimeRes<'Exec'>> => {
    const id = checkId('container_id', req.container_id);
    if (!req.cmd?.length) throw invalidArgument('cmd must not be empty');
    checkStreams(req);
    const info = await mustFindRunningContainer(deps, id, ctx);
    const url = deps.streaming.issueUrl({
      kind: 'exec',
      containerId: info.Id,
      cmd: req.cmd,
      tty: req.tty,
      stdin: req.stdin,
      stdout: req.stdout,
      stderr: req.stderr,
    });
    return { url };
  };
}
