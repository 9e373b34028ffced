import { promises as fsp } from 'fs';
import * as path from 'path';
import { isWithin, realpathPartialAsync } from '../logging/safe-path';
import { invalidArgument } from '../errors';
import type { ServiceDeps } from '../service-deps';
import { resolveLogPath } from './container-config';

/**
 * Where CreateContainer may put a container's CRI log. Beyond the lexical check
 * (relative, no `..`), the path is resolved on disk: it must stay inside the pod's log
 * directory through any symlink, must not land in crishim's own state (checkpoints and
 * CNI cache under the root, the CNI config dir: a log named like another pod's checkpoint
 * would corrupt it), and an existing file there must be a plain file, not a symlink.
 * Returns the real path, which StartContainer, ReopenContainerLog and RemoveContainer
 * later check again (see logging/safe-path.ts). Empty when no log was asked for.
 */
export async function checkedLogPath(
  deps: Pick<ServiceDeps, 'config'>,
  logDirectory: string | undefined,
  logPath: string | undefined,
): Promise<string> {
  const lexical = resolveLogPath(logDirectory, logPath);
  if (!lexical) return '';
  const dir = await realpathPartialAsync(logDirectory!);
  const c = deps.config;
  const own = await Promise.all([c.rootDirectory, c.cniCacheDir, c.cniConfDir].map(realpathPartialAsync));
  for (const o of own) {
    if (isWithin(dir, o))
      throw invalidArgument(
        `sandbox_config.log_directory ${JSON.stringify(logDirectory)} is inside crishim's own state directory ${o}`,
      );
  }
  const file = path.join(await realpathPartialAsync(path.dirname(lexical)), path.basename(lexical));
  for (const o of own) {
    if (isWithin(file, o))
      throw invalidArgument(`config.log_path ${JSON.stringify(logPath)} lands in crishim's own state directory ${o}`);
  }
  if (!isWithin(path.dirname(file), dir)) {
    throw invalidArgument(
      `config.log_path ${JSON.stringify(logPath)} leaves the pod log directory through a symlink (to ${path.dirname(file)})`,
    );
  }
  const st = await fsp.lstat(file).catch(() => undefined);
  if (st && !st.isFile())
    throw invalidArgument(
      `config.log_path ${JSON.stringify(logPath)} exists and is not a regular file (a symlink or other)`,
    );
  return file;
}
