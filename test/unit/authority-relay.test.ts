import * as http2 from 'http2';
import * as net from 'net';
import { AuthorityRewriter } from '../../src/server/authority-fix';
import { AuthorityRelay } from '../../src/server/authority-relay';

/** Resolves when `conn` closes; answers every byte it received before that. */
function untilClosed(conn: net.Socket): Promise<Buffer> {
  const got: Buffer[] = [];
  conn.on('data', (d: Buffer) => got.push(d));
  conn.on('error', () => undefined);
  return new Promise((resolve) => conn.once('close', () => resolve(Buffer.concat(got))));
}

describe("the relay that carries old clients' connections to HTTP/2", () => {
  let relay: AuthorityRelay;
  let served: net.Socket[];
  let h2: http2.Http2Server;

  beforeEach(async () => {
    served = [];
    // a plain HTTP/2 server answering every request with its :authority, as a gRPC server sees it
    h2 = http2.createServer();
    h2.on('stream', (stream, headers) => {
      stream.respond({ ':status': 200 });
      stream.end(String(headers[':authority']));
    });
    relay = new AuthorityRelay((conn) => {
      served.push(conn);
      h2.emit('connection', conn);
    }, 200);
    await relay.start();
  });
  afterEach(() => {
    relay.close();
    for (const c of served) c.destroy();
  });

  it('closes a private connection that opens with a token it never handed out, serving nothing', async () => {
    const conn = net.connect(relay.address);
    conn.write(Buffer.alloc(16, 7));
    conn.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    expect((await untilClosed(conn)).length).toBe(0);
    expect(served).toHaveLength(0);
  });

  it('closes a private connection that stays silent, or sends less than a token', async () => {
    const silent = net.connect(relay.address);
    const short = net.connect(relay.address);
    short.write(Buffer.alloc(8, 1));
    await Promise.all([untilClosed(silent), untilClosed(short)]);
    expect(served).toHaveLength(0);
  });

  it('carries a client that sends the socket path to HTTP/2 as localhost, call after call', async () => {
    const front = net.createServer((client) => {
      const rewriter = new AuthorityRewriter();
      relay.relay(client, rewriter, []);
    });
    const frontPath = `\0crishim-relay-test-${process.pid}`;
    await new Promise<void>((resolve) => front.listen(frontPath, resolve));
    const session = http2.connect('http://localhost', { createConnection: () => net.connect(frontPath) });
    try {
      for (let i = 0; i < 3; i++) {
        const answer = await new Promise<string>((resolve, reject) => {
          const req = session.request({ ':path': '/x', ':authority': '/run/crishim/crishim.sock' });
          let body = '';
          req.on('data', (d: Buffer) => (body += d.toString()));
          req.on('end', () => resolve(body));
          req.on('error', reject);
          req.end();
        });
        expect(answer).toBe('localhost');
      }
      // one private connection for the one client connection
      expect(served).toHaveLength(1);
    } finally {
      session.close();
      front.close();
    }
  });
});
