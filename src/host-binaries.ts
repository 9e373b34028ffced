import { accessSync, constants } from 'fs';
import * as path from 'path';

/** Directories searched besides PATH: the daemon may run with a minimal PATH (systemd, env -i). */
const EXTRA_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** Where a host binary is: the first executable `bin` on PATH, then in the usual system directories. */
export function which(bin: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of [...(env.PATH ?? '').split(':').filter(Boolean), ...EXTRA_PATH]) {
    const file = path.join(dir, bin);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}
