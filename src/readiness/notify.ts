import { execFile } from 'child_process';
import { accessSync, constants } from 'fs';
import * as path from 'path';

/**
 * The service manager's notification channel (sd_notify(3)): NOTIFY_SOCKET
 * names a Unix datagram socket, which Node cannot open (no AF_UNIX
 * SOCK_DGRAM in net or dgram). Native addons that can are awkward inside the
 * single executable, so the datagram is sent by systemd's own
 * `systemd-notify`, present wherever systemd is. With `--pid` (and root) it
 * sends the datagram with the daemon's pid as the sender credentials, so
 * systemd attributes it to the (long-lived) main process even after the helper
 * exited; `--no-block` skips the barrier, which waits for a receiver that
 * closes passed descriptors. The unit still sets NotifyAccess=all in case the
 * credentials cannot be set.
 */
export interface Notifier {
  /** False without NOTIFY_SOCKET (not started by systemd with Type=notify): send() does nothing. */
  readonly enabled: boolean;
  /** Sends KEY=VALUE assignments in one datagram; never throws (readiness must not take the daemon down). */
  send(fields: Record<string, string>): Promise<void>;
}

export type RunNotify = (file: string, args: string[], env: NodeJS.ProcessEnv) => Promise<void>;

const runNotify: RunNotify = (file, args, env) =>
  new Promise((resolve, reject) => {
    execFile(file, args, { env, timeout: 10_000 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(' ')}: ${stderr.trim() || err.message}`));
      else resolve();
    });
  });

/** Where systemd-notify lives: PATH first, then the usual directories (the daemon may run with no PATH). */
export function findSystemdNotify(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = [...(env.PATH ?? '').split(':').filter(Boolean), '/usr/bin', '/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    const file = path.join(dir, 'systemd-notify');
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** STATUS= is one line: newlines would start new assignments. */
export function formatAssignments(fields: Record<string, string>): string[] {
  return Object.entries(fields).map(([k, v]) => `${k}=${v.replace(/[\r\n]+/g, ' ')}`);
}

export function createNotifier(
  opts: {
    env?: NodeJS.ProcessEnv;
    pid?: number;
    run?: RunNotify;
    find?: (env: NodeJS.ProcessEnv) => string | undefined;
    onError?: (err: Error) => void;
  } = {},
): Notifier {
  const env = opts.env ?? process.env;
  const socket = env.NOTIFY_SOCKET;
  if (!socket) return { enabled: false, send: async () => undefined };
  const run = opts.run ?? runNotify;
  const pid = opts.pid ?? process.pid;
  const bin = (opts.find ?? findSystemdNotify)(env);
  // one message at a time, in order: READY=1 must never overtake the STATUS= sent before it
  let queue: Promise<void> = Promise.resolve();
  let warned = false;
  const fail = (err: Error): void => {
    if (warned) return;
    warned = true;
    opts.onError?.(err);
  };
  return {
    enabled: true,
    send(fields) {
      if (!bin) {
        fail(
          new Error(
            `NOTIFY_SOCKET is set (${socket}) but systemd-notify was not found: systemd cannot be told crishim is ready`,
          ),
        );
        return Promise.resolve();
      }
      queue = queue.then(() =>
        run(bin, ['--no-block', `--pid=${pid}`, ...formatAssignments(fields)], { NOTIFY_SOCKET: socket }).catch(fail),
      );
      return queue;
    },
  };
}
