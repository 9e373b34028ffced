import * as grpc from '@grpc/grpc-js';
import * as fs from 'fs';
import * as http2 from 'http2';
import * as hpack from 'hpack.js';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { serveConnection } from '../../src/server/accept-connection';
import { AuthorityRelay } from '../../src/server/authority-relay';
import {
  AuthorityRewriter,
  HeaderBlockError,
  literalHeaderBlock,
  MAX_HEADER_BLOCK,
} from '../../src/server/authority-fix';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

function encode(headers: hpack.Header[], enc = hpack.compressor.create({ table: { size: 4096 } })): Buffer {
  enc.write(headers);
  const out: Buffer[] = [];
  for (let c = enc.read(); c !== null; c = enc.read()) out.push(c as Buffer);
  return Buffer.concat(out);
}

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

/** Splits a byte stream back into frames and decodes every header block. */
function parse(
  bytes: Buffer,
): Array<{ type: number; flags: number; stream: number; headers?: hpack.Header[]; payload: Buffer }> {
  const dec = hpack.decompressor.create({ table: { size: 4096 } });
  const frames = [];
  let rest = bytes;
  while (rest.length >= 9) {
    const len = rest.readUIntBE(0, 3);
    const f = { type: rest[3], flags: rest[4], stream: rest.readUInt32BE(5), payload: rest.subarray(9, 9 + len) } as {
      type: number;
      flags: number;
      stream: number;
      headers?: hpack.Header[];
      payload: Buffer;
    };
    if (f.type === 1) {
      dec.write(f.payload);
      dec.execute();
      f.headers = [];
      for (let h = dec.read(); h !== null; h = dec.read()) f.headers.push(h as hpack.Header);
    }
    frames.push(f);
    rest = rest.subarray(9 + len);
  }
  return frames;
}

describe(':authority rewriting for old gRPC clients on Unix sockets', () => {
  it('replaces a socket-path authority, keeps the rest, passes other frames through', () => {
    const client = hpack.compressor.create({ table: { size: 4096 } });
    const reqHeaders = (authority: string): hpack.Header[] => [
      { name: ':method', value: 'POST' },
      { name: ':scheme', value: 'http' },
      { name: ':path', value: '/runtime.v1.RuntimeService/Version' },
      { name: ':authority', value: authority },
      { name: 'content-type', value: 'application/grpc' },
    ];
    const settings = frame(4, 0, 0, Buffer.alloc(0));
    const h1 = frame(1, 0x4, 1, encode(reqHeaders('/run/crishim/crishim.sock'), client));
    const data = frame(0, 0x1, 1, Buffer.from([0, 0, 0, 0, 0]));
    // a second request on the same connection uses the client's dynamic table
    const h2 = frame(1, 0x4 | 0x1, 3, encode(reqHeaders('/run/crishim/crishim.sock'), client));
    const input = Buffer.concat([PREFACE, settings, h1, data, h2]);

    const r = new AuthorityRewriter();
    // byte-by-byte feeding must not matter
    const out = Buffer.concat([...input].map((b) => r.push(Buffer.from([b]))));
    expect(out.subarray(0, 24)).toEqual(PREFACE);
    const frames = parse(out.subarray(24));
    expect(frames.map((f) => [f.type, f.stream])).toEqual([
      [4, 0],
      [1, 1],
      [0, 1],
      [1, 3],
    ]);
    for (const f of frames.filter((x) => x.type === 1)) {
      expect(f.headers?.find((h) => h.name === ':authority')?.value).toBe('localhost');
      expect(f.headers?.find((h) => h.name === ':path')?.value).toBe('/runtime.v1.RuntimeService/Version');
      expect(f.flags & 0x4).toBe(0x4);
    }
    expect(frames[3].flags & 0x1).toBe(0x1); // END_STREAM kept
    expect(frames[2].payload).toEqual(Buffer.from([0, 0, 0, 0, 0]));
  });

  it('leaves a connection whose first authority is valid byte for byte alone, CONTINUATION frames included', () => {
    const client = hpack.compressor.create({ table: { size: 4096 } });
    const block = encode(
      [
        { name: ':method', value: 'POST' },
        { name: ':authority', value: 'localhost' },
        { name: 'x-big', value: 'v'.repeat(100) },
      ],
      client,
    );
    const second = encode(
      [
        { name: ':method', value: 'POST' },
        { name: ':authority', value: 'localhost' },
      ],
      client,
    );
    const input = Buffer.concat([
      PREFACE,
      frame(4, 0, 0, Buffer.alloc(0)),
      frame(1, 0, 5, block.subarray(0, 10)),
      frame(9, 0x4, 5, block.subarray(10)),
      frame(0, 0x1, 5, Buffer.from([0, 0, 0, 0, 0])),
      frame(1, 0x5, 7, second),
    ]);
    // whole, and in pieces that end mid-frame right after the deciding block
    expect(new AuthorityRewriter().push(input)).toEqual(input);
    const r = new AuthorityRewriter();
    const cut = 24 + 9 + 9 + 10 + 9 + (block.length - 10) + 4;
    expect(
      Buffer.concat([
        r.push(input.subarray(0, cut)),
        r.push(input.subarray(cut, cut + 3)),
        r.push(input.subarray(cut + 3)),
      ]),
    ).toEqual(input);
  });

  it('drops only the ACK of its own SETTINGS, and passes later header blocks untouched until it comes', () => {
    const client = hpack.compressor.create({ table: { size: 4096 } });
    const h = (path: string): Buffer =>
      encode(
        [
          { name: ':method', value: 'POST' },
          { name: ':authority', value: 'localhost' },
          { name: ':path', value: path },
        ],
        client,
      );
    const ack = frame(4, 0x1, 0, Buffer.alloc(0));
    // a client that does not wait for the server: two requests before it acknowledges anything;
    // the second block refers to the first one's dynamic-table entries, so it must not be re-encoded
    const before = Buffer.concat([
      PREFACE,
      frame(4, 0, 0, Buffer.alloc(0)),
      frame(1, 0x5, 1, h('/a')),
      frame(1, 0x5, 3, h('/b')),
    ]);
    const after = Buffer.concat([frame(1, 0x5, 5, h('/c')), ack]);
    const r = new AuthorityRewriter({ ownSettingsSent: true });
    const out = Buffer.concat([r.push(before), r.push(ack), r.push(after)]);
    // the first ACK is the one for our SETTINGS; the second is nghttp2's and stays
    expect(out).toEqual(Buffer.concat([before, after]));
    expect(r.decision).toBe('passthrough');
  });

  it('keeps rewriting every block once the first one needed it', () => {
    const client = hpack.compressor.create({ table: { size: 4096 } });
    const h1 = frame(1, 0x4, 1, encode([{ name: ':authority', value: '/run/x.sock' }], client));
    const h3 = frame(
      1,
      0x4,
      3,
      encode(
        [
          { name: ':authority', value: '/run/x.sock' },
          { name: 'x-n', value: '2' },
        ],
        client,
      ),
    );
    const frames = parse(new AuthorityRewriter().push(Buffer.concat([PREFACE, h1, h3])).subarray(24));
    expect(frames.map((f) => f.headers?.find((h) => h.name === ':authority')?.value)).toEqual([
      'localhost',
      'localhost',
    ]);
    expect(frames[1].headers?.find((h) => h.name === 'x-n')?.value).toBe('2');
  });
});

describe('the header blocks the shim writes', () => {
  it('decode to the same headers, long values, every byte value and never-indexed flags kept', () => {
    const headers: hpack.Header[] = [
      { name: ':method', value: 'POST', neverIndex: false },
      { name: ':authority', value: 'localhost', neverIndex: false },
      { name: 'x-long', value: 'v'.repeat(70_000), neverIndex: false },
      { name: 'x-bytes', value: String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i)), neverIndex: false },
      { name: 'authorization', value: 'secret', neverIndex: true },
    ];
    const dec = hpack.decompressor.create({ table: { size: 4096 } });
    dec.write(literalHeaderBlock(headers));
    dec.execute();
    const got: hpack.Header[] = [];
    for (let h = dec.read(); h !== null; h = dec.read()) got.push(h as hpack.Header);
    expect(got).toEqual(headers);
  });

  it('index nothing: the same block decodes alike against any table state', () => {
    const block = literalHeaderBlock([{ name: 'grpc-timeout', value: '2S', neverIndex: false }]);
    // literal without indexing, literal name: 0x00, then length-prefixed name and value
    expect(block[0]).toBe(0x00);
    expect(block.subarray(1).toString('latin1')).toBe('\x0cgrpc-timeout\x022S');
  });
});

describe('bounds on what a client can make the shim buffer', () => {
  it('refuses a header block that grows past the limit through CONTINUATION frames', () => {
    const r = new AuthorityRewriter();
    r.push(Buffer.concat([PREFACE, frame(1, 0, 1, Buffer.alloc(100))]));
    const cont = frame(9, 0, 1, Buffer.alloc(16384));
    let fed = 100;
    expect(() => {
      for (; fed < 1024 * 1024; fed += 16384) r.push(cont);
    }).toThrow(HeaderBlockError);
    // stopped at the limit, not after a megabyte
    expect(fed).toBeLessThanOrEqual(MAX_HEADER_BLOCK + 16384);
  });

  it('refuses a frame larger than the maximum frame size before buffering it', () => {
    const head = Buffer.alloc(9);
    head.writeUIntBE(16 * 1024 * 1024 - 1, 0, 3);
    head[3] = 9;
    expect(() => new AuthorityRewriter().push(Buffer.concat([PREFACE, head]))).toThrow(HeaderBlockError);
  });

  it('passes a large DATA stream fed in small pieces through unchanged', () => {
    const data = Buffer.concat(Array.from({ length: 64 }, (_, i) => frame(0, 0, 1, Buffer.alloc(16384, i))));
    const r = new AuthorityRewriter();
    const out: Buffer[] = [r.push(PREFACE)];
    for (let off = 0; off < data.length; off += 1000) out.push(r.push(data.subarray(off, off + 1000)));
    expect(Buffer.concat(out)).toEqual(Buffer.concat([PREFACE, data]));
  });
});

describe('serving a connection bare or behind the shim', () => {
  const echo = {
    path: '/test.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  };
  let dir: string;
  let sock: string;
  let listener: net.Server;
  let server: grpc.Server;
  let relay: AuthorityRelay | undefined;
  let served: Array<'bare' | 'shim'>;

  /** A gRPC echo server whose connections go through serveConnection. */
  async function start(decideMs?: number): Promise<void> {
    server = new grpc.Server();
    server.addService(
      { Echo: echo },
      {
        Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request),
      },
    );
    const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    const started = new AuthorityRelay((conn) => injector.injectConnection(conn));
    relay = started;
    await started.start();
    listener = net.createServer((c) =>
      serveConnection(
        c,
        {
          bare: (conn) => {
            served.push('bare');
            injector.injectConnection(conn);
          },
          rewrite: (conn, rewriter, held) => {
            served.push('shim');
            started.relay(conn, rewriter, held);
          },
        },
        decideMs,
      ),
    );
    await new Promise<void>((r) => listener.listen(sock, r));
  }

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crishim-serve-'));
    sock = path.join(dir, 's.sock');
    served = [];
  });
  afterEach(async () => {
    listener?.close();
    relay?.close();
    server?.forceShutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** One gRPC message frame (uncompressed) around `body`. */
  const grpcFrame = (body: string): Buffer => {
    const b = Buffer.from(body);
    const head = Buffer.alloc(5);
    head.writeUInt32BE(b.length, 1);
    return Buffer.concat([head, b]);
  };

  /** A POST on an HTTP/2 session with the given :authority; answers the response body. */
  const post = (session: http2.ClientHttp2Session, authority: string, body: string): Promise<Buffer> =>
    new Promise((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': echo.path,
        ':authority': authority,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => resolve(Buffer.concat(parts)));
      req.on('error', reject);
      req.end(grpcFrame(body));
    });

  it('hands a client with a valid authority the bare socket, several calls on one connection', async () => {
    await start();
    const client = new grpc.Client(`unix://${sock}`, grpc.credentials.createInsecure());
    try {
      for (const word of ['one', 'two', 'three']) {
        const got = await new Promise<Buffer>((resolve, reject) =>
          client.makeUnaryRequest(
            echo.path,
            echo.requestSerialize,
            echo.responseDeserialize,
            Buffer.from(word),
            (e, r) => (e ? reject(e) : resolve(r as Buffer)),
          ),
        );
        expect(got.toString()).toBe(word);
      }
    } finally {
      client.close();
    }
    // one connection, and the two SETTINGS ACKs it sent did not upset HTTP/2 (see ownSettingsSent)
    expect(served).toEqual(['bare']);
  });

  it('puts a client that sends the socket path as authority behind the shim, and it is answered', async () => {
    await start();
    const session = http2.connect('http://localhost', { createConnection: () => net.connect(sock) });
    try {
      expect(await post(session, sock, 'old')).toEqual(grpcFrame('old'));
      expect(await post(session, sock, 'again')).toEqual(grpcFrame('again'));
    } finally {
      session.close();
    }
    expect(served).toEqual(['shim']);
  });

  it('serves a connection that sends no request in time through the shim, and answers it later', async () => {
    await start(50);
    const session = http2.connect('http://localhost', { createConnection: () => net.connect(sock) });
    try {
      await new Promise((r) => setTimeout(r, 300));
      expect(served).toEqual(['shim']);
      expect(await post(session, 'localhost', 'late')).toEqual(grpcFrame('late'));
    } finally {
      session.close();
    }
  });

  it('a connection handed over bare is still cut when it floods CONTINUATION frames (nghttp2 bounds it)', async () => {
    await start();
    const first = encode([
      { name: ':method', value: 'POST' },
      { name: ':scheme', value: 'http' },
      { name: ':path', value: echo.path },
      { name: ':authority', value: 'localhost' },
      { name: 'content-type', value: 'application/grpc' },
      { name: 'te', value: 'trailers' },
    ]);
    const c = net.connect(sock);
    c.on('error', () => undefined);
    c.on('data', () => undefined);
    c.write(
      Buffer.concat([
        PREFACE,
        frame(4, 0, 0, Buffer.alloc(0)),
        frame(1, 0x4, 1, first),
        frame(0, 0x1, 1, grpcFrame('x')),
        frame(4, 0x1, 0, Buffer.alloc(0)),
      ]),
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(served).toEqual(['bare']);
    const limit = 64 * 1024 * 1024;
    let sent = 0;
    const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
    c.write(frame(1, 0, 3, Buffer.from([0x82])));
    const cont = frame(9, 0, 3, Buffer.alloc(16384, 0x40));
    const pump = (): void => {
      while (sent < limit && !c.destroyed) {
        sent += cont.length;
        if (!c.write(cont)) return void c.once('drain', pump);
      }
      c.destroy();
    };
    pump();
    await closed;
    expect(sent).toBeLessThan(limit);
  });

  it('speaks first: a SETTINGS frame reaches a client that has sent nothing (grpc-go waits for it)', async () => {
    await start();
    const c = net.connect(sock);
    try {
      const first = await new Promise<Buffer>((resolve) => c.once('data', resolve));
      expect(first.subarray(0, 9)).toEqual(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]));
    } finally {
      c.destroy();
    }
  });
});
