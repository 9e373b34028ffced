import * as net from 'net';
import * as fs from 'fs';
import { builtScript, isSingleExecutable } from '../assets';

/** Hidden first argument that makes crishim (src/entry.ts) run as a port-forward relay instead of the daemon. */
export const RELAY_COMMAND = 'port-forward-relay';

/**
 * The command that runs a relay: crishim itself, so it works from the single
 * executable (whose process.execPath is crishim, not node) and from dist/ alike.
 */
export function relayInvocation(sockPath: string): { file: string; args: string[] } {
  if (isSingleExecutable()) return { file: process.execPath, args: [RELAY_COMMAND, sockPath] };
  return { file: process.execPath, args: [builtScript('entry.js'), RELAY_COMMAND, sockPath] };
}

/**
 * Runs inside the pod's network namespace (started with nsenter, so it still
 * sees the host filesystem): listens on a host Unix socket; each connection
 * starts with a 2-byte big-endian port, is answered with one status byte
 * (0 = connected; 1 + message = failed) and is then spliced to 127.0.0.1:port,
 * half-closes passed through. Exits when its stdin (crishim's pipe) closes,
 * so it never outlives crishim.
 */
export function runPortForwardRelay(sockPath: string): void {
  try {
    fs.unlinkSync(sockPath);
  } catch {
    // not there: the usual case
  }
  const server = net.createServer({ allowHalfOpen: true }, (c) => {
    let head = Buffer.alloc(0);
    c.on('error', () => undefined);
    const onData = (d: Buffer): void => {
      head = Buffer.concat([head, d]);
      if (head.length < 2) return;
      c.off('data', onData);
      c.pause();
      const port = head.readUInt16BE(0);
      const rest = head.subarray(2);
      const t = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
      let connected = false;
      t.on('error', (e) => {
        if (!connected) c.end(Buffer.concat([Buffer.from([1]), Buffer.from(String(e.message))]));
        else c.destroy();
      });
      t.once('connect', () => {
        connected = true;
        c.write(Buffer.from([0]));
        if (rest.length) t.write(rest);
        c.pipe(t);
        t.pipe(c);
        c.on('close', () => t.destroy());
        t.on('close', () => {
          if (!c.writableEnded) c.destroy();
        });
      });
    };
    c.on('data', onData);
  });
  server.listen(sockPath, () => process.stdout.write('ready\n'));
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
