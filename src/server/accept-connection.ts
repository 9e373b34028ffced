import type * as net from 'net';
import { AuthorityRewriter } from './authority-fix';

/**
 * How an accepted CRI connection reaches grpc-js. Clients that send a valid
 * `:authority` (kubelets whose CRI client sets `localhost`, grpc-js) get the
 * bare socket, so HTTP/2 reads and writes it natively and no byte crosses into
 * JavaScript. Old clients that send the socket path have each request header
 * block rewritten (authority-fix.ts) on its way through authority-relay.ts.
 *
 * Which one a connection is shows in its first header block, so its first
 * bytes are held until then. grpc-go sends no request before the server's
 * SETTINGS, and nghttp2 would send those only once it has the connection: so
 * an empty SETTINGS frame goes out first from here, and the client's ACK of it
 * is dropped (nghttp2 would take it for an unexpected ACK of its own).
 */

/** An empty SETTINGS frame: the server preface, all defaults (nghttp2 sends its own values next). */
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 0x4, 0, 0, 0, 0, 0]);

/**
 * How long a new connection may hold back its first header block before it is served through
 * the rewrite route anyway: a client that connects and waits (or pings) must not wait on us.
 */
const DECIDE_MS = 250;
/** Bytes held back while undecided before the connection takes the rewrite route, which applies backpressure. */
const MAX_HELD = 1 << 20;

/** Where serveConnection sends an accepted connection once it knows which kind it is. */
export interface ConnectionRoutes {
  /** its first request carries a valid :authority: HTTP/2 takes the socket as it is */
  bare(conn: net.Socket): void;
  /** its requests need rewriting: `held` are the bytes `rewriter` already let through */
  rewrite(conn: net.Socket, rewriter: AuthorityRewriter, held: Buffer[]): void;
}

/** Hands an accepted connection to one of `routes` (see the top of this file). */
export function serveConnection(socket: net.Socket, routes: ConnectionRoutes, decideMs = DECIDE_MS): void {
  const rewriter = new AuthorityRewriter({ ownSettingsSent: true });
  const held: Buffer[] = [];
  let heldBytes = 0;
  let done = false;
  const finish = (how: 'bare' | 'rewrite' | 'drop', err?: Error): void => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    socket.removeListener('data', onData);
    socket.removeListener('end', onGone);
    socket.removeListener('close', onGone);
    socket.removeListener('error', onGone);
    socket.pause();
    if (how === 'drop') {
      socket.destroy(err);
    } else if (how === 'bare') {
      // HTTP/2 reads what is buffered on the socket before its own reads (node issue 35475)
      if (held.length > 0) socket.unshift(Buffer.concat(held));
      routes.bare(socket);
    } else {
      routes.rewrite(socket, rewriter, held);
    }
  };
  const onData = (chunk: Buffer): void => {
    try {
      const out = rewriter.push(chunk);
      if (out.length > 0) held.push(out);
      heldBytes += out.length;
    } catch (err) {
      finish('drop', err as Error);
      return;
    }
    const decision = rewriter.decision;
    if (decision === 'passthrough') finish('bare');
    else if (decision === 'rewrite' || heldBytes > MAX_HELD) finish('rewrite');
  };
  const onGone = (): void => finish('drop');
  const timer = setTimeout(() => finish('rewrite'), decideMs);
  socket.on('data', onData);
  socket.once('end', onGone);
  socket.once('close', onGone);
  socket.once('error', onGone);
  socket.write(EMPTY_SETTINGS);
}
