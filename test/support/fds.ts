import { promises as fsp } from 'fs';

/**
 * How many of a process's fds are open on `file` (this process by default). A file whose
 * directory was removed reads as `<path> (deleted)` and is still held, so it counts too.
 */
export async function fdsOn(file: string, pid: number | 'self' = 'self'): Promise<number> {
  const dir = `/proc/${pid}/fd`;
  const fds = await fsp.readdir(dir);
  const targets = await Promise.all(fds.map((fd) => fsp.readlink(`${dir}/${fd}`).catch(() => '')));
  return targets.filter((t) => t === file || t === `${file} (deleted)`).length;
}
