import * as http from 'http';
import type { AddressInfo, Socket } from 'net';
import { PassThrough } from 'stream';
import * as spdy from 'spdy-transport';
import type { SpdyConnection, SpdyHeaders, SpdyStream } from 'spdy-transport';
import { copyDemuxed } from '../../src/streaming/demux';
import {
  createResizeDecoder,
  errorStreamPayload,
  negotiate,
  type TerminalSize,
} from '../../src/streaming/remotecommand';
import { acceptSpdy, acceptStream, header } from '../../src/streaming/spdy';
import { createTokenStore } from '../../src/streaming/tokens';

describe('tokens', () => {
  it('are single use, expire, and are unguessable strings', () => {
    let now = 1000;
    const store = createTokenStore<string>({ ttlMs: 60_000, now: () => now });
    const a = store.issue('a');
    const b = store.issue('b');
    expect(a).not.toBe(b);
    expect(a.length).toBeGreaterThanOrEqual(22);
    expect(store.consume(a)).toEqual({ ok: true, value: 'a' });
    expect(store.consume(a)).toEqual({ ok: false, reason: 'unknown' });
    now += 60_001;
    expect(store.consume(b)).toEqual({ ok: false, reason: 'expired' });
    store.close();
  });
});

describe('remotecommand payloads', () => {
  it('v4 reports exit codes as a metav1.Status', () => {
    const st = JSON.parse(
      String(errorStreamPayload('v4.channel.k8s.io', { kind: 'exit', exitCode: 3, cmd: ['false'] })),
    );
    expect(st).toMatchObject({
      metadata: {},
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    expect(st.message).toMatch(/^command terminated with non-zero exit code: /);
    expect(JSON.parse(String(errorStreamPayload('v5.channel.k8s.io', { kind: 'exit', exitCode: 0 })))).toEqual({
      metadata: {},
      status: 'Success',
    });
  });

  it('older versions write text, and nothing on success', () => {
    expect(errorStreamPayload('v2.channel.k8s.io', { kind: 'exit', exitCode: 0 })).toBeUndefined();
    expect(String(errorStreamPayload('channel.k8s.io', { kind: 'error', message: 'boom' }))).toBe('boom');
  });

  it('negotiates in client order', () => {
    expect(negotiate(['v5.channel.k8s.io', 'v4.channel.k8s.io'], ['v4.channel.k8s.io', 'v3.channel.k8s.io'])).toBe(
      'v4.channel.k8s.io',
    );
    expect(negotiate(['x'], ['v4.channel.k8s.io'])).toBeUndefined();
  });

  it('decodes resize events split and coalesced across chunks', () => {
    const sizes: TerminalSize[] = [];
    const feed = createResizeDecoder((s) => sizes.push(s));
    feed(Buffer.from('{"Width":80,"Hei'));
    feed(Buffer.from('ght":24}\n{"Width":100,"Height":50}\n{"Width":-1,"Height":5}'));
    expect(sizes).toEqual([
      { width: 80, height: 24 },
      { width: 100, height: 50 },
    ]);
  });
});

describe('docker stream demux', () => {
  it('splits stdout and stderr frames even when headers straddle chunks', async () => {
    const frame = (kind: number, s: string): Buffer => {
      const h = Buffer.alloc(8);
      h[0] = kind;
      h.writeUInt32BE(Buffer.byteLength(s), 4);
      return Buffer.concat([h, Buffer.from(s)]);
    };
    const all = Buffer.concat([frame(1, 'out1'), frame(2, 'err'), frame(1, 'out2')]);
    const src = new PassThrough();
    const out = new PassThrough();
    const err = new PassThrough();
    const done = copyDemuxed(src, out, err);
    for (let i = 0; i < all.length; i += 5) src.write(all.subarray(i, i + 5));
    src.end();
    await done;
    expect(String(out.read())).toBe('out1out2');
    expect(String(err.read())).toBe('err');
  });
});

/** A client like client-go's: SPDY streams with only their own headers. */
async function clientGoLikeStream(
  port: number,
  headers: Record<string, string>,
): Promise<{ conn: SpdyConnection; socket: Socket; replied: Promise<boolean> }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/',
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' },
    });
    req.on('upgrade', (_res, socket: Socket) => {
      const conn = spdy.connection.create(socket, { protocol: 'spdy', isServer: false });
      type Framer = { headersToDict(h: SpdyHeaders, pre: ((h: SpdyHeaders) => void) | undefined, cb: unknown): void };
      const framer = (conn as unknown as { _spdyState: { framer: Framer } })._spdyState.framer;
      const orig = framer.headersToDict;
      framer.headersToDict = function (this: Framer, h, pre, cb) {
        return orig.call(
          this,
          h,
          (hd: SpdyHeaders) => {
            pre?.(hd);
            for (const k of [':method', ':path', ':version', ':scheme', ':host']) delete hd[k];
          },
          cb,
        );
      };
      conn.on('error', () => undefined);
      conn.start(3.1);
      const s = conn.request({ method: 'POST', path: '/', headers });
      s.on('error', () => undefined);
      const replied = new Promise<boolean>((r) => {
        s.once('response', () => r(true));
        socket.once('close', () => r(false));
        setTimeout(() => r(false), 3000).unref();
      });
      resolve({ conn, socket, replied });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('SPDY server', () => {
  async function serve(
    onUpgrade: (req: http.IncomingMessage, socket: Socket, head: Buffer) => void,
  ): Promise<http.Server> {
    const server = http.createServer();
    server.on('upgrade', onUpgrade);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return server;
  }

  it('accepts streams that carry no :method/:path (as client-go sends them)', async () => {
    const seen: SpdyStream[] = [];
    const server = await serve((req, socket, head) => {
      const up = acceptSpdy(req, socket, head, ['v4.channel.k8s.io']);
      up?.conn.on('stream', (s) => {
        seen.push(s);
        acceptStream(s);
      });
    });
    const c = await clientGoLikeStream((server.address() as AddressInfo).port, { streamType: 'stdout' });
    expect(await c.replied).toBe(true);
    expect(header(seen[0].headers, 'streamType')).toBe('stdout');
    c.socket.destroy();
    server.close();
  });

  it('control: plain spdy-transport rejects the same stream', async () => {
    const server = await serve((_req, socket) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
      const conn = spdy.connection.create(socket, { protocol: 'spdy', isServer: true });
      conn.on('error', () => undefined);
      conn.on('stream', (s) => s.respond(200, {}));
    });
    const c = await clientGoLikeStream((server.address() as AddressInfo).port, { streamType: 'stdout' });
    expect(await c.replied).toBe(false);
    c.socket.destroy();
    server.close();
  });

  it('answers 403 with the accepted versions when nothing matches', async () => {
    const server = await serve((req, socket, head) => void acceptSpdy(req, socket, head, ['v4.channel.k8s.io']));
    const res = await new Promise<http.IncomingMessage>((resolve) => {
      const req = http.request({
        port: (server.address() as AddressInfo).port,
        host: '127.0.0.1',
        headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v9.channel.k8s.io' },
      });
      req.on('response', resolve);
      req.end();
    });
    res.resume();
    expect(res.statusCode).toBe(403);
    expect(res.headers['x-accepted-stream-protocol-versions']).toContain('v4.channel.k8s.io');
    server.close();
  });
});
