import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import type { Logger } from '../logging/logger';

// Where the CRI socket comes from: a path we bind, or the listening fd systemd passed.

/** First fd systemd passes (SD_LISTEN_FDS_START). */
export const SD_LISTEN_FDS_START = 3;

/**
 * The listening socket systemd handed over (`fd://`), per sd_listen_fds(3):
 * LISTEN_PID must name us and LISTEN_FDS count at least one fd.
 */
export function activatedFd(env: NodeJS.ProcessEnv = process.env, pid = process.pid): number {
  const fds = Number(env.LISTEN_FDS ?? '0');
  if (env.LISTEN_PID !== String(pid) || !Number.isInteger(fds) || fds < 1) {
    throw new Error(
      '--container-runtime-endpoint fd:// needs socket activation (LISTEN_PID/LISTEN_FDS from systemd), but none was passed',
    );
  }
  return SD_LISTEN_FDS_START;
}

export function socketPathOf(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('unix:')) return endpoint.slice('unix:'.length);
  if (endpoint.startsWith('/')) return endpoint;
  throw new Error(`unsupported endpoint ${JSON.stringify(endpoint)}: expected unix:///path/to.sock`);
}

/**
 * Resolves true when a process listens on the socket path. Only a refused connection
 * (or no file) means nobody does: a live daemon whose accept queue is full, its event
 * loop busy with a burst, refuses with EAGAIN instead, and must not lose its socket.
 */
export function socketAnswers(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(socketPath);
    const done = (alive: boolean): void => {
      sock.destroy();
      resolve(alive);
    };
    sock.once('connect', () => done(true));
    sock.once('error', (err: NodeJS.ErrnoException) => done(err.code !== 'ECONNREFUSED' && err.code !== 'ENOENT'));
    // a Unix connect completes or fails at once; no answer at all is not a stale file either
    sock.setTimeout(1000, () => done(true));
  });
}

/** A Unix socket address holds 108 bytes with the NUL: given a longer path, Node binds it cut short. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Replaces a stale socket file; refuses to steal one another live daemon serves. */
export async function prepareSocket(socketPath: string, logger: Logger): Promise<void> {
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    throw new Error(
      `${socketPath} is ${bytes} bytes, longer than a Unix socket path can be (${MAX_SOCKET_PATH_BYTES}); choose a shorter --container-runtime-endpoint`,
    );
  }
  fs.mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o750 });
  let st: fs.Stats;
  try {
    st = fs.lstatSync(socketPath);
  } catch {
    return;
  }
  if (!st.isSocket()) {
    throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
  }
  if (await socketAnswers(socketPath)) {
    throw new Error(
      `another process is already serving on ${socketPath}; stop it first or choose another --container-runtime-endpoint`,
    );
  }
  logger.warn('removing stale socket', { socket: socketPath });
  fs.unlinkSync(socketPath);
}
