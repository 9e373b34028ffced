import { randomBytes } from 'crypto';
import * as net from 'net';
import type { ConnectionRoutes } from './accept-connection';
import type { AuthorityRewriter } from './authority-fix';

/**
 * Carries a connection whose requests need the :authority rewrite (authority-fix.ts) to HTTP/2
 * over a second, private Unix connection, so that Node's HTTP/2 still reads and writes a native
 * socket. Handing HTTP/2 a JavaScript stream instead routes every read and write through Node's
 * JS stream wrapper, which made an old kubelet's calls cost about half as much CPU again as a new
 * kubelet's (`npm run bench -- --only=relist-cost`). Here JavaScript touches each chunk once
 * each way: the request bytes to rewrite them, the answers to copy them back.
 *
 * The private listener is an abstract Unix socket (no file to leave behind or to guard), which
 * any process in the network namespace could find and connect to. So each relayed connection
 * opens with a single-use random token, and the listener serves only connections that show one
 * it handed out; anything else is closed before HTTP/2 sees a byte.
 */

const TOKEN_BYTES = 16;
/** How long an accepted private connection may take to show its token. */
const TOKEN_MS = 2_000;

export class AuthorityRelay {
  private readonly name = `\0crishim-authority-relay-${randomBytes(16).toString('hex')}`;
  private readonly listener: net.Server;
  /** Tokens handed out and not yet shown, hex. */
  private readonly pending = new Set<string>();

  /** `serve` gets each private connection that showed its token, positioned at the client's first byte. */
  constructor(
    private readonly serve: (conn: net.Socket) => void,
    private readonly tokenMs = TOKEN_MS,
  ) {
    this.listener = net.createServer((conn) => this.accept(conn));
  }

  /** serveConnection's routes: bare connections straight to `serve`, the rest through this relay. */
  routes(): ConnectionRoutes {
    return { bare: this.serve, rewrite: (conn, rewriter, held) => this.relay(conn, rewriter, held) };
  }

  /** The private listener's name (a leading NUL: Linux's abstract namespace). */
  get address(): string {
    return this.name;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.listener.once('error', (err) => reject(new Error(`cannot listen for the authority relay: ${err.message}`)));
      this.listener.listen(this.name, () => resolve());
    });
  }

  close(): void {
    this.listener.close();
  }

  /**
   * Serves `client` through the relay: `held` (already rewritten) goes first, then every later
   * chunk through `rewriter`; HTTP/2's answers go back unchanged.
   */
  relay(client: net.Socket, rewriter: AuthorityRewriter, held: Buffer[]): void {
    const token = randomBytes(TOKEN_BYTES);
    const key = token.toString('hex');
    this.pending.add(key);
    const inner = net.connect(this.name);
    inner.write(token);
    for (const b of held) inner.write(b);
    const cut = (err?: Error): void => {
      this.pending.delete(key);
      client.destroy(err);
      inner.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      let out: Buffer;
      try {
        out = rewriter.push(chunk);
      } catch (err) {
        // undecodable headers: the connection is unusable either way
        cut(err as Error);
        return;
      }
      if (out.length > 0 && !inner.write(out)) client.pause();
    });
    inner.on('drain', () => client.resume());
    inner.on('data', (chunk: Buffer) => {
      if (!client.write(chunk)) inner.pause();
    });
    client.on('drain', () => inner.resume());
    client.on('end', () => inner.end());
    inner.on('end', () => client.end());
    client.on('error', () => cut());
    inner.on('error', () => cut());
    client.on('close', () => cut());
    inner.on('close', () => cut());
    client.resume();
  }

  /** Takes the token off an accepted private connection; serves it only if the token was handed out. */
  private accept(conn: net.Socket): void {
    const got: Buffer[] = [];
    let bytes = 0;
    const timer = setTimeout(() => conn.destroy(), this.tokenMs);
    const onData = (chunk: Buffer): void => {
      got.push(chunk);
      bytes += chunk.length;
      if (bytes < TOKEN_BYTES) return;
      conn.removeListener('data', onData);
      clearTimeout(timer);
      conn.pause();
      const all = Buffer.concat(got);
      if (!this.pending.delete(all.subarray(0, TOKEN_BYTES).toString('hex'))) {
        conn.destroy();
        return;
      }
      // HTTP/2 reads what is buffered on the socket before its own reads (node issue 35475)
      if (all.length > TOKEN_BYTES) conn.unshift(all.subarray(TOKEN_BYTES));
      this.serve(conn);
    };
    conn.on('data', onData);
    conn.on('error', () => conn.destroy());
    conn.on('close', () => clearTimeout(timer));
  }
}
