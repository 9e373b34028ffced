import { closeSync, read, statSync } from 'fs';
import { promisify } from 'util';

/**
 * The file calls of the json-file follower on raw descriptors. Looking for files is synchronous
 * (json-file-follower.ts says why); only reads of log bytes go through the thread pool.
 */

/** A path's stat, undefined when absent or unreadable (counted as absent, as a file Docker removed). */
export function statQuietly(file: string): { ino: number; size: number } | undefined {
  try {
    return statSync(file, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

const readCb = promisify(read);

/** Closes a descriptor the follower held; one already closed holds nothing to release. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // EBADF: nothing to release
  }
}

/** Reads up to `length` bytes at `position` of an open file into `buf`; resolves to the count read. */
export async function readAt(fd: number, buf: Buffer, length: number, position: number): Promise<number> {
  return (await readCb(fd, buf, 0, length, position)).bytesRead;
}
