/**
 * Streaming clients that do not play along (issue 15): one that stops reading exec output,
 * and one that floods stdin into a process that never reads it. crishim must pass the
 * pressure back to them (TCP) instead of buffering: its RSS stays within 128 MB of where
 * it started. client-go ignores the SPDY window, so the test clients lift theirs too.
 */
import * as http from 'http';
import type { Socket } from 'net';
import { promises as fsp } from 'fs';
import * as spdy from 'spdy-transport';
import type { SpdyConnection, SpdyHeaders, SpdyStream } from 'spdy-transport';
import WebSocket from 'ws';
import { BUSYBOX, call, podConfig, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(180_000);

const BOUND_BYTES = 128 * 1024 * 1024;
const FLOOD_MS = 8_000;

let h: Crishim;
let containerId: string;
beforeAll(async () => {
  h = await startCrishim({ subnetIndex: 248 });
  const config = podConfig('flood');
  const { pod_sandbox_id: pod } = await call(h.runtime, 'RunPodSandbox', { config });
  ({ container_id: containerId } = await call(h.runtime, 'CreateContainer', {
    pod_sandbox_id: pod,
    config: { metadata: { name: 'idle', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
    sandbox_config: config,
  }));
  await call(h.runtime, 'StartContainer', { container_id: containerId });
});
afterAll(() => teardown(h));

async function rssBytes(pid: number): Promise<number> {
  const m = /VmRSS:\s+(\d+) kB/.exec(await fsp.readFile(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

/** Highest RSS of the daemon seen while `during` runs, sampled every 200 ms. */
async function peakRss(during: () => Promise<void>): Promise<number> {
  const pid = h.proc.pid!;
  let peak = await rssBytes(pid);
  const timer = setInterval(() => {
    void rssBytes(pid).then(
      (r) => (peak = Math.max(peak, r)),
      () => undefined,
    );
  }, 200);
  try {
    await during();
  } finally {
    clearInterval(timer);
  }
  return Math.max(peak, await rssBytes(pid));
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- a SPDY client that, like client-go, sends only its own headers and ignores the window

interface Windowed {
  _spdyState: { window: { send: { isEmpty(): boolean } } };
}
function liftSendWindow(x: unknown): void {
  (x as Windowed)._spdyState.window.send.isEmpty = () => false;
}

function stripPseudoHeaders(conn: SpdyConnection): void {
  type Framer = { headersToDict(h: SpdyHeaders, pre: ((h: SpdyHeaders) => void) | undefined, cb: unknown): void };
  const framer = (conn as unknown as { _spdyState: { framer: Framer } })._spdyState.framer;
  const orig = framer.headersToDict;
  framer.headersToDict = function (this: Framer, headers, pre, cb) {
    return orig.call(
      this,
      headers,
      (hd: SpdyHeaders) => {
        pre?.(hd);
        for (const k of [':method', ':path', ':version', ':scheme', ':host']) delete hd[k];
      },
      cb,
    );
  };
}

function spdyUpgrade(url: string): Promise<{ conn: SpdyConnection; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' },
    });
    req.on('upgrade', (_res, socket: Socket, head: Buffer) => {
      if (head.length) socket.unshift(head);
      const conn = spdy.connection.create(socket, { protocol: 'spdy', isServer: false });
      stripPseudoHeaders(conn);
      liftSendWindow(conn);
      conn.on('error', () => undefined);
      conn.start(3.1);
      resolve({ conn, socket });
    });
    req.on('response', (res) => reject(new Error(`HTTP ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
}

function openStream(conn: SpdyConnection, streamType: string): Promise<SpdyStream> {
  return new Promise((resolve, reject) => {
    const s = conn.request({ method: 'POST', path: '/', headers: { streamType } });
    liftSendWindow(s);
    s.on('error', () => undefined);
    s.once('response', () => resolve(s));
    s.once('error', reject);
  });
}

async function execUrl(cmd: string[], stdin: boolean): Promise<string> {
  return (
    await call(h.runtime, 'Exec', { container_id: containerId, cmd, stdin, stdout: true, stderr: false, tty: false })
  ).url;
}

/**
 * Writes into `stream` for `ms` as fast as the connection takes it. spdy-transport (like
 * crishim's side) completes writes at once and queues frames in its framer, so the client
 * watches that queue and its socket, as a TCP sender would; the event loop keeps turning.
 * Returns the bytes that actually left through the socket.
 */
async function flood(conn: SpdyConnection, socket: Socket, stream: SpdyStream, ms: number): Promise<number> {
  const framer = (conn as unknown as { _spdyState: { framer: { readableLength: number } } })._spdyState.framer;
  const chunk = Buffer.alloc(256 * 1024, 0x61);
  const start = socket.bytesWritten;
  const end = Date.now() + ms;
  while (Date.now() < end && !socket.destroyed) {
    if (framer.readableLength + socket.writableLength > 4 * 1024 * 1024) await sleep(20);
    else stream.write(chunk);
    await new Promise((r) => setImmediate(r));
  }
  return socket.bytesWritten - start;
}

describe('a SPDY exec client that does not keep up', () => {
  it('stops reading output: crishim stops reading Docker instead of buffering', async () => {
    const before = await rssBytes(h.proc.pid!);
    const { conn, socket } = await spdyUpgrade(await execUrl(['cat', '/dev/zero'], false));
    const error = await openStream(conn, 'error');
    error.end();
    const stdout = await openStream(conn, 'stdout');
    stdout.end();
    // let some output flow, then never read again
    await new Promise((r) => stdout.once('data', r));
    // detached from the SPDY parser too, so nothing resumes it
    socket.unpipe();
    socket.pause();
    const peak = await peakRss(() => sleep(FLOOD_MS));
    socket.destroy();
    expect(peak - before).toBeLessThan(BOUND_BYTES);
  });

  it('floods stdin into a process that never reads it: crishim stops reading the client', async () => {
    const before = await rssBytes(h.proc.pid!);
    const { conn, socket } = await spdyUpgrade(await execUrl(['sleep', '3600'], true));
    const error = await openStream(conn, 'error');
    error.end();
    const stdin = await openStream(conn, 'stdin');
    const stdout = await openStream(conn, 'stdout');
    stdout.end();
    stdout.resume();
    let sent = 0;
    const peak = await peakRss(async () => {
      sent = await flood(conn, socket, stdin, FLOOD_MS);
    });
    socket.destroy();
    // the flood reached crishim (its socket took data) and was then held back
    expect(sent).toBeGreaterThan(64 * 1024);
    expect(peak - before).toBeLessThan(BOUND_BYTES);
  });
});

describe('a WebSocket exec client that floods stdin', () => {
  it('is read no faster than the process takes it', async () => {
    const before = await rssBytes(h.proc.pid!);
    const url = (await execUrl(['sleep', '3600'], true)).replace(/^http/, 'ws');
    const ws = new WebSocket(url, ['v4.channel.k8s.io']);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const frame = Buffer.concat([Buffer.from([0]), Buffer.alloc(256 * 1024, 0x61)]);
    const peak = await peakRss(async () => {
      const end = Date.now() + FLOOD_MS;
      // the client's own socket buffer is the pressure we watch: send while it drains
      while (Date.now() < end) {
        if (ws.bufferedAmount > 8 * 1024 * 1024) await sleep(50);
        else ws.send(frame);
        await new Promise((r) => setImmediate(r));
      }
    });
    ws.terminate();
    expect(peak - before).toBeLessThan(BOUND_BYTES);
  });
});
