import * as fs from 'fs';
import * as path from 'path';

/**
 * CRI log files are written, reopened and deleted by a root daemon in directories the
 * kubelet (or whoever sends the request) names. A symlink planted in any component would
 * turn that into "append to / delete any file on the host". Paths are stored as real paths
 * at create time; every later use checks that the directory still resolves to itself and
 * never follows a symlink in the final component (O_NOFOLLOW). containerd writes through
 * a final symlink; we refuse it.
 */

/** Real path of `p`: its longest existing ancestor resolved, the rest appended as given. */
export function realpathPartial(p: string): string {
  const abs = path.resolve(p);
  const rest: string[] = [];
  for (let cur = abs; ; cur = path.dirname(cur)) {
    try {
      return path.join(fs.realpathSync(cur), ...rest.reverse());
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || cur === path.dirname(cur)) throw err;
      rest.push(path.basename(cur));
    }
  }
}

/** realpathPartial off the event loop, for request handlers. */
export async function realpathPartialAsync(p: string): Promise<string> {
  const abs = path.resolve(p);
  const rest: string[] = [];
  for (let cur = abs; ; cur = path.dirname(cur)) {
    try {
      return path.join(await fs.promises.realpath(cur), ...rest.reverse());
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || cur === path.dirname(cur)) throw err;
      rest.push(path.basename(cur));
    }
  }
}

/** True when `p` is `dir` or lies below it (both absolute and normalised). */
export function isWithin(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);
}

export class UnsafeLogPathError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`log path ${file}: ${reason}`);
    this.name = 'UnsafeLogPathError';
  }
}

/** Throws unless `dir` (absolute) resolves to itself: no symlinked component anywhere. */
function checkDirResolves(file: string, dir: string): void {
  const real = realpathPartial(dir);
  if (real !== dir) throw new UnsafeLogPathError(file, `directory resolves to ${real} (a symlink in the path)`);
}

const O_APPEND_NOFOLLOW =
  fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW;

/**
 * Opens a CRI log file for appending, creating its directory. Synchronous like the
 * writes it serves (see CriLogFile). Fails with ELOOP when the file itself is a symlink.
 */
export function openLogForAppend(file: string, mode = 0o640): number {
  const dir = path.dirname(file);
  // checked before mkdir too, so a symlinked parent cannot make us create directories elsewhere
  checkDirResolves(file, dir);
  fs.mkdirSync(dir, { recursive: true });
  checkDirResolves(file, dir);
  try {
    return fs.openSync(file, O_APPEND_NOFOLLOW, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw new UnsafeLogPathError(file, 'is a symlink');
    throw err;
  }
}

/** Deletes a CRI log file unless its directory no longer resolves to itself; unlink never follows the final symlink. */
export async function removeLogFile(file: string): Promise<void> {
  checkDirResolves(file, path.dirname(file));
  await fs.promises.unlink(file).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}
