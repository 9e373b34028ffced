import type * as net from 'net';
import { Duplex } from 'stream';
import { AuthorityRewriter } from './authority-fix';

/**
 * How an accepted CRI connection reaches grpc-js. Clients that send a valid
 * `:authority` (kubelets whose CRI client sets `localhost`, grpc-js) get the
 * bare socket, so HTTP/2 reads and writes it natively and no byte crosses into
 * JavaScript (a stream in between cost about a quarter of a relist's CPU). Old
 * clients that send the socket path go behind the rewriting stream of
 * authority-fix.ts.
 *
 * Which one a connection is shows in its first header block, so its first
 * bytes are held until then. grpc-go sends no request before the server's
 * SETTINGS, and nghttp2 would send those only once it has the connection: so
 * an empty SETTINGS frame goes out first from here, and the client's ACK of it
 * is dropped (nghttp2 would take it for an unexpected ACK of its own).
 */

/** Wraps an accepted connection so grpc-js reads the rewritten request stream; `held` are bytes `rewriter` already let through. */
function withAuthorityFix(socket: net.Socket, rewriter: AuthorityRewriter, held: Buffer[]): Duplex {
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      socket.write(chunk, cb);
    },
    // what HTTP/2 flushes together (a response's headers, data and trailers) leaves in one writev
    writev(chunks: Array<{ chunk: Buffer }>, cb) {
      socket.cork();
      chunks.forEach(({ chunk }, i) => socket.write(chunk, i === chunks.length - 1 ? cb : undefined));
      socket.uncork();
    },
    final(cb) {
      socket.end(cb);
    },
    destroy(err, cb) {
      socket.destroy(err ?? undefined);
      cb(err);
    },
  });
  for (const b of held) duplex.push(b);
  socket.on('data', (chunk: Buffer) => {
    let out: Buffer;
    try {
      out = rewriter.push(chunk);
    } catch (err) {
      // undecodable headers: the connection is unusable either way
      socket.destroy(err as Error);
      return;
    }
    if (out.length > 0 && !duplex.push(out)) socket.pause();
  });
  socket.on('end', () => duplex.push(null));
  socket.on('error', (err) => duplex.destroy(err));
  socket.on('close', () => duplex.destroy());
  socket.resume();
  return duplex;
}

/** An empty SETTINGS frame: the server preface, all defaults (nghttp2 sends its own values next). */
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 0x4, 0, 0, 0, 0, 0]);

/**
 * How long a new connection may hold back its first header block before it is served through
 * the shim anyway: a client that connects and waits (or pings) must not wait on us.
 */
const DECIDE_MS = 250;
/** Bytes held back while undecided before the connection goes to the shim, whose stream applies backpressure. */
const MAX_HELD = 1 << 20;

/**
 * Hands an accepted connection to `serve`: as the bare socket when its first request carries a
 * valid :authority, else behind the rewriting stream (see the top of this file).
 */
export function serveConnection(socket: net.Socket, serve: (conn: Duplex) => void, decideMs = DECIDE_MS): void {
  const rewriter = new AuthorityRewriter({ ownSettingsSent: true });
  const held: Buffer[] = [];
  let heldBytes = 0;
  let done = false;
  const finish = (how: 'bare' | 'shim' | 'drop', err?: Error): void => {
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
      serve(socket);
    } else {
      serve(withAuthorityFix(socket, rewriter, held));
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
    else if (decision === 'rewrite' || heldBytes > MAX_HELD) finish('shim');
  };
  const onGone = (): void => finish('drop');
  const timer = setTimeout(() => finish('shim'), decideMs);
  socket.on('data', onData);
  socket.once('end', onGone);
  socket.once('close', onGone);
  socket.once('error', onGone);
  socket.write(EMPTY_SETTINGS);
}
