import type * as http from 'http';
import type { AddressInfo } from 'net';
import type { Duplex } from 'stream';

/** Starts listening; rejects with the listen error (port taken, bad address). */
export async function listen(server: http.Server, port: number, bindAddress: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, bindAddress, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** The URL base clients get: an unspecified bind address is advertised as loopback unless told otherwise. */
export function baseUrlFor(bindAddress: string, port: number, advertiseAddress?: string): string {
  const unspecified = bindAddress === '0.0.0.0' || bindAddress === '::' || bindAddress === '';
  const host = advertiseAddress ?? (unspecified ? '127.0.0.1' : bindAddress);
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** The server's open client sockets, so close() can cut sessions that would otherwise hold it open. */
export class OpenSockets {
  private readonly sockets = new Set<Duplex>();

  constructor(server: http.Server) {
    server.on('connection', (s: Duplex) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
  }

  get size(): number {
    return this.sockets.size;
  }

  destroyAll(): void {
    for (const s of this.sockets) s.destroy();
  }
}
