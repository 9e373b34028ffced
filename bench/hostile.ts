/**
 * Hostile-client figures (issue 15): crishim's RSS and Version latency while a client
 * (1) floods HTTP/2 CONTINUATION frames at the CRI socket (1 GiB offered),
 * (2) runs a SPDY exec of `cat /dev/zero` and stops reading, and
 * (3) floods a SPDY exec's stdin into a process that never reads it.
 * Each phase is compared with an idle baseline of the same run. Targets: RSS within
 * 128 MB of the start, Version p99 under 100 ms.
 *
 *   tsc -p bench/tsconfig.json && node bench/dist/bench/hostile.js
 *
 * Needs root, dockerd, the CNI plugins and the images from scripts/build-images.sh.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { existsSync, promises as fsp, readFileSync } from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import * as spdy from 'spdy-transport';
import type { SpdyConnection, SpdyHeaders, SpdyStream } from 'spdy-transport';
import type { ProtoGrpcType } from '../src/generated/api';
import type { RuntimeServiceClient } from '../src/generated/runtime/v1/RuntimeService';

const REPO = path.resolve(__dirname, '..', '..', '..');
const BUSYBOX = 'crishim-test/busybox:latest';
const PHASE_MS = 10_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Daemon {
  proc: ChildProcess;
  runtime: RuntimeServiceClient;
  socket: string;
  dir: string;
}

async function startDaemon(): Promise<Daemon> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-bench-hostile-'));
  const confDir = path.join(dir, 'net.d');
  await fsp.mkdir(confDir);
  const conf = JSON.parse(await fsp.readFile(path.join(REPO, 'cni', '10-crishim.conflist'), 'utf8'));
  conf.name = 'crishim-bench-hostile';
  conf.plugins[0].bridge = 'crishimhost0';
  conf.plugins[0].ipam.ranges = [[{ subnet: '10.88.249.0/24' }]];
  conf.plugins[0].ipam.dataDir = path.join(dir, 'ipam');
  await fsp.writeFile(path.join(confDir, '10-bench.conflist'), JSON.stringify(conf));
  const socket = path.join(dir, 'crishim.sock');
  const proc = spawn(
    process.execPath,
    [
      path.join(REPO, 'dist', 'main.js'),
      '--container-runtime-endpoint',
      `unix://${socket}`,
      '--root-directory',
      path.join(dir, 'root'),
      '--cni-conf-dir',
      confDir,
      '--log-level',
      'error',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const def = protoLoader.loadSync(path.join(REPO, 'proto', 'runtime', 'v1', 'api.proto'), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const proto = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  const runtime = new proto.runtime.v1.RuntimeService(
    `unix://${socket}`,
    grpc.credentials.createInsecure(),
  ) as unknown as RuntimeServiceClient;
  for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(50);
  return { proc, runtime, socket, dir };
}

function rpc<T>(d: Daemon, method: string, req: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (
      d.runtime as unknown as Record<
        string,
        (r: unknown, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: Error | null, res: T) => void) => void
      >
    )[method];
    fn.call(d.runtime, req, new grpc.Metadata(), { deadline: Date.now() + 60_000 }, (e, res) =>
      e ? reject(e) : resolve(res),
    );
  });
}

const rss = (pid: number): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? NaN;

/** Version every 20 ms and the daemon's RSS every 200 ms while `load` runs for `ms`. */
async function measure(
  d: Daemon,
  ms: number,
  load: (until: number) => Promise<void>,
): Promise<{ p50: number; p99: number; max: number; rssStart: number; rssPeak: number }> {
  const pid = d.proc.pid!;
  const rssStart = rss(pid);
  let rssPeak = rssStart;
  const until = Date.now() + ms;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rss(pid))), 200);
  const lat: number[] = [];
  const probe = (async () => {
    while (Date.now() < until) {
      const t = process.hrtime.bigint();
      await rpc(d, 'Version', {});
      lat.push(Number(process.hrtime.bigint() - t) / 1e6);
      await sleep(20);
    }
  })();
  await Promise.all([probe, load(until)]);
  clearInterval(sampler);
  rssPeak = Math.max(rssPeak, rss(pid));
  return { p50: pct(lat, 50), p99: pct(lat, 99), max: Math.max(...lat), rssStart, rssPeak };
}

function h2frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

/** Offers up to `total` bytes of CONTINUATION frames, reconnecting whenever crishim closes the connection. */
async function continuationFlood(socketPath: string, until: number, total: number): Promise<number> {
  const preface = Buffer.concat([
    Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
    h2frame(4, 0, 0, Buffer.alloc(0)),
    h2frame(1, 0, 1, Buffer.from([0x82])),
  ]);
  const cont = h2frame(9, 0, 1, Buffer.alloc(16384, 0x40));
  let sent = 0;
  while (Date.now() < until && sent < total) {
    await new Promise<void>((resolve) => {
      const s = net.connect(socketPath);
      s.on('error', () => undefined);
      s.once('close', () => resolve());
      s.write(preface);
      const pump = (): void => {
        while (Date.now() < until && sent < total && !s.destroyed) {
          sent += cont.length;
          if (!s.write(cont)) return void s.once('drain', pump);
        }
        s.destroy();
      };
      pump();
    });
  }
  return sent;
}

// ---- a SPDY client like client-go: only its own headers, no flow control

function liftSendWindow(x: unknown): void {
  (x as { _spdyState: { window: { send: { isEmpty(): boolean } } } })._spdyState.window.send.isEmpty = () => false;
}

function spdyUpgrade(url: string): Promise<{ conn: SpdyConnection; socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' },
    });
    req.on('upgrade', (_res, socket: net.Socket, head: Buffer) => {
      if (head.length) socket.unshift(head);
      const conn = spdy.connection.create(socket, { protocol: 'spdy', isServer: false });
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
  return new Promise((resolve) => {
    const s = conn.request({ method: 'POST', path: '/', headers: { streamType } });
    liftSendWindow(s);
    s.on('error', () => undefined);
    s.once('response', () => resolve(s));
  });
}

async function main(): Promise<void> {
  const d = await startDaemon();
  const rows: string[][] = [];
  const row = (what: string, m: Awaited<ReturnType<typeof measure>>, extra = ''): void => {
    rows.push([
      what,
      m.p50.toFixed(1),
      m.p99.toFixed(1),
      m.max.toFixed(1),
      ((m.rssPeak - m.rssStart) / 1e6).toFixed(1),
      extra,
    ]);
  };
  try {
    row('idle (baseline)', await measure(d, PHASE_MS / 2, async () => undefined));

    let offered = 0;
    row(
      '1 GiB CONTINUATION flood',
      await measure(d, PHASE_MS, async (until) => {
        offered = await continuationFlood(d.socket, until, 1024 ** 3);
      }),
      `${(offered / 1e6).toFixed(0)} MB offered`,
    );

    const config = {
      metadata: { name: 'hostile', namespace: 'crishim-bench', uid: `hostile-${process.pid}`, attempt: 0 },
      labels: {},
    };
    const { pod_sandbox_id: pod } = await rpc<{ pod_sandbox_id: string }>(d, 'RunPodSandbox', { config });
    const { container_id: c } = await rpc<{ container_id: string }>(d, 'CreateContainer', {
      pod_sandbox_id: pod,
      config: { metadata: { name: 'idle', attempt: 0 }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
      sandbox_config: config,
    });
    await rpc(d, 'StartContainer', { container_id: c });
    const exec = async (cmd: string[], stdin: boolean): Promise<string> =>
      (await rpc<{ url: string }>(d, 'Exec', { container_id: c, cmd, stdin, stdout: true, stderr: false, tty: false }))
        .url;

    {
      const { conn, socket } = await spdyUpgrade(await exec(['cat', '/dev/zero'], false));
      (await openStream(conn, 'error')).end();
      const out = await openStream(conn, 'stdout');
      out.end();
      await new Promise((r) => out.once('data', r));
      // detached from the SPDY parser too, so nothing resumes it
      socket.unpipe();
      socket.pause();
      row('SPDY exec, client stops reading', await measure(d, PHASE_MS, async () => undefined));
      socket.destroy();
    }
    {
      const { conn, socket } = await spdyUpgrade(await exec(['sleep', '3600'], true));
      (await openStream(conn, 'error')).end();
      const stdin = await openStream(conn, 'stdin');
      const out = await openStream(conn, 'stdout');
      out.end();
      out.resume();
      const chunk = Buffer.alloc(256 * 1024, 0x61);
      // spdy-transport completes writes at once and queues frames: watch that queue and the
      // socket as a TCP sender would, and keep the event loop (and the Version probe) turning
      const framer = (conn as unknown as { _spdyState: { framer: { readableLength: number } } })._spdyState.framer;
      const start = socket.bytesWritten;
      row(
        'SPDY exec, stdin flood',
        await measure(d, PHASE_MS, async (until) => {
          while (Date.now() < until) {
            if (framer.readableLength + socket.writableLength > 4 * 1024 * 1024) await sleep(20);
            else stdin.write(chunk);
            await new Promise((r) => setImmediate(r));
          }
        }),
        `${((socket.bytesWritten - start) / 1e6).toFixed(1)} MB accepted by crishim's socket`,
      );
      socket.destroy();
    }
    await rpc(d, 'StopPodSandbox', { pod_sandbox_id: pod });
    await rpc(d, 'RemovePodSandbox', { pod_sandbox_id: pod });
  } finally {
    d.proc.kill('SIGTERM');
    await new Promise((r) => d.proc.once('exit', r));
    try {
      execFileSync('ip', ['link', 'del', 'crishimhost0'], { stdio: 'ignore' });
    } catch {
      /* never created */
    }
    await fsp.rm(d.dir, { recursive: true, force: true });
  }
  console.log('| phase | Version p50 ms | p99 ms | max ms | RSS growth MB | |');
  console.log('|---|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
