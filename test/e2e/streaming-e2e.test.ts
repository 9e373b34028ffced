/**
 * Exec/Attach/PortForward through the streaming server against real Docker.
 * Clients speak the wire protocols through spdy-transport (client side, with
 * the pseudo-headers stripped as client-go does) and the `ws` package.
 */
import { createHash, randomBytes } from 'crypto';
import * as http from 'http';
import type { Socket } from 'net';
import Docker from 'dockerode';
import { DockerodeEngine } from '../../src/docker/dockerode-engine';
import * as spdy from 'spdy-transport';
import type { SpdyConnection, SpdyHeaders, SpdyStream } from 'spdy-transport';
import WebSocket from 'ws';
import { execHandlers } from '../../src/rpc/runtime-service';
import { EXEC_SYNC_OUTPUT_LIMIT } from '../../src/rpc/exec-sync';
import { TYPE_CONTAINER, TYPE_LABEL, TYPE_SANDBOX } from '../../src/labels';
import { createLogger } from '../../src/logging/logger';
import type { CallContext } from '../../src/server/rpc';
import { startStreamingServer, type StreamingServer } from '../../src/streaming/server';

jest.setTimeout(120_000);

const docker = new Docker();
const BUSYBOX = 'crishim-test/busybox:latest';
const logger = createLogger(process.env.CRISHIM_TEST_LOG ?? 'warn', 'text');
const created: string[] = [];
let streaming: StreamingServer;
let h: ReturnType<typeof execHandlers>;

function ctx(signal = new AbortController().signal): CallContext {
  return { signal, method: 'test', log: logger, annotate: () => undefined };
}

async function runContainer(cmd: string[], extra: Partial<Docker.ContainerCreateOptions> = {}): Promise<string> {
  const c = await docker.createContainer({
    Image: BUSYBOX,
    name: `crishim-test-streaming-${randomBytes(4).toString('hex')}`,
    Cmd: cmd,
    // a CRI container as far as exec/attach can tell: they refuse Docker containers crishim does not manage
    ...extra,
    Labels: { [TYPE_LABEL]: TYPE_CONTAINER, ...extra.Labels },
  });
  created.push(c.id);
  await c.start();
  return c.id;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls until `check` holds; the test's own timeout bounds the wait. */
async function eventually(check: () => Promise<boolean>, what: string, tries = 100): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`never happened: ${what}`);
}

async function psOutput(containerId: string): Promise<string> {
  const r = await h.ExecSync({ container_id: containerId, cmd: ['ps', '-o', 'pid,args'], timeout: '0' }, ctx());
  return String(r.stdout);
}

// ---- SPDY client (spdy-transport as client) --------------------------------

interface SpdyClient {
  conn: SpdyConnection;
  socket: Socket;
  protocol: string;
}

/** client-go's spdystream sends only its own headers; make spdy-transport do the same. */
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

function spdyUpgrade(url: string, protocols: string[]): Promise<SpdyClient> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': protocols },
    });
    req.on('upgrade', (res, socket: Socket, head: Buffer) => {
      if (head.length) socket.unshift(head);
      const conn = spdy.connection.create(socket, { protocol: 'spdy', isServer: false });
      stripPseudoHeaders(conn);
      conn.on('error', () => undefined);
      conn.start(3.1);
      resolve({ conn, socket, protocol: String(res.headers['x-stream-protocol-version']) });
    });
    req.on('response', (res) => {
      res.resume();
      reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { statusCode: res.statusCode }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a stream and waits for the server's SYN_REPLY, as client-go does. */
function openStream(conn: SpdyConnection, headers: Record<string, string>): Promise<SpdyStream> {
  return new Promise((resolve, reject) => {
    const s = conn.request({ method: 'POST', path: '/', headers });
    s.once('response', () => resolve(s));
    s.once('error', reject);
  });
}

function collect(s: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Buffer[] = [];
    s.on('data', (d: Buffer) => parts.push(d));
    s.once('end', () => resolve(Buffer.concat(parts)));
    s.once('close', () => resolve(Buffer.concat(parts)));
  });
}

interface ExecStreams {
  client: SpdyClient;
  stdin?: SpdyStream;
  stdout?: SpdyStream;
  stderr?: SpdyStream;
  resize?: SpdyStream;
  error: SpdyStream;
}

async function spdyRemote(
  url: string,
  o: { stdin?: boolean; stdout?: boolean; stderr?: boolean; tty?: boolean; protocols?: string[] },
): Promise<ExecStreams> {
  const client = await spdyUpgrade(
    url,
    o.protocols ?? ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'],
  );
  // same order as client-go: error first, then the requested stdio, then resize
  const error = await openStream(client.conn, { streamType: 'error' });
  error.end();
  const r: ExecStreams = { client, error };
  if (o.stdin) r.stdin = await openStream(client.conn, { streamType: 'stdin' });
  if (o.stdout !== false) {
    r.stdout = await openStream(client.conn, { streamType: 'stdout' });
    r.stdout.end();
  }
  if (o.stderr && !o.tty) {
    r.stderr = await openStream(client.conn, { streamType: 'stderr' });
    r.stderr.end();
  }
  if (o.tty) r.resize = await openStream(client.conn, { streamType: 'resize' });
  return r;
}

async function finishRemote(r: ExecStreams): Promise<{ stdout: string; stderr: string; error: string }> {
  const [stdout, stderr, error] = await Promise.all([
    r.stdout ? collect(r.stdout) : Buffer.alloc(0),
    r.stderr ? collect(r.stderr) : Buffer.alloc(0),
    collect(r.error),
  ]);
  r.client.socket.destroy();
  return { stdout: stdout.toString(), stderr: stderr.toString(), error: error.toString() };
}

async function execUrl(
  containerId: string,
  cmd: string[],
  o: { stdin?: boolean; tty?: boolean; stderr?: boolean } = {},
): Promise<string> {
  const res = await h.Exec(
    {
      container_id: containerId,
      cmd,
      tty: o.tty ?? false,
      stdin: o.stdin ?? false,
      stdout: true,
      stderr: o.stderr ?? !o.tty,
    },
    ctx(),
  );
  return String(res.url);
}

// ---- setup -----------------------------------------------------------------

let worker: string;

beforeAll(async () => {
  const engine = new DockerodeEngine(docker);
  streaming = await startStreamingServer({ bindAddress: '127.0.0.1', port: 0, docker: engine, logger });
  h = execHandlers({ docker: engine, streaming, logger });
  worker = await runContainer(['sleep', '100000']);
});

afterAll(async () => {
  await streaming?.close();
  await Promise.all(
    created.map((id) =>
      docker
        .getContainer(id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
});

// ---- ExecSync ----------------------------------------------------------------

describe('ExecSync', () => {
  it('returns stdout, stderr and the exit code', async () => {
    const r = await h.ExecSync(
      { container_id: worker, cmd: ['sh', '-c', 'echo out; echo err >&2; exit 3'], timeout: '0' },
      ctx(),
    );
    expect(String(r.stdout)).toBe('out\n');
    expect(String(r.stderr)).toBe('err\n');
    expect(r.exit_code).toBe(3);
  });

  it('kills the process tree and fails with DEADLINE_EXCEEDED past the timeout', async () => {
    await expect(
      h.ExecSync({ container_id: worker, cmd: ['sh', '-c', 'sleep 301; echo never'], timeout: '1' }, ctx()),
    ).rejects.toMatchObject({ kind: 'deadline-exceeded' });
    await eventually(async () => !(await psOutput(worker)).includes('sleep 301'), 'sleep 301 gone');
    expect(await psOutput(worker)).not.toContain('sleep 301');
  });

  it('kills the process when the call is cancelled', async () => {
    const ac = new AbortController();
    const p = h.ExecSync(
      { container_id: worker, cmd: ['sh', '-c', 'sleep 302; echo never'], timeout: '0' },
      ctx(ac.signal),
    );
    await eventually(async () => (await psOutput(worker)).includes('sleep 302'), 'sleep 302 running');
    ac.abort();
    await expect(p).rejects.toMatchObject({ kind: 'cancelled' });
    await eventually(async () => !(await psOutput(worker)).includes('sleep 302'), 'sleep 302 gone');
  });

  it('caps output at the CRI message size', async () => {
    const r = await h.ExecSync(
      { container_id: worker, cmd: ['dd', 'if=/dev/zero', 'bs=1048576', 'count=20'], timeout: '0' },
      ctx(),
    );
    expect((r.stdout as Buffer).length).toBe(EXEC_SYNC_OUTPUT_LIMIT);
    expect(r.exit_code).toBe(0);
  });

  it('maps a missing or stopped container to NOT_FOUND / FAILED_PRECONDITION', async () => {
    await expect(
      h.ExecSync({ container_id: 'f'.repeat(64), cmd: ['true'], timeout: '0' }, ctx()),
    ).rejects.toMatchObject({ kind: 'not-found' });
    const stopped = await docker.createContainer({
      Image: BUSYBOX,
      name: `crishim-test-streaming-${randomBytes(4).toString('hex')}`,
      Cmd: ['true'],
      Labels: { [TYPE_LABEL]: TYPE_CONTAINER },
    });
    created.push(stopped.id);
    await expect(h.ExecSync({ container_id: stopped.id, cmd: ['true'], timeout: '0' }, ctx())).rejects.toMatchObject({
      kind: 'failed-precondition',
    });
    await expect(
      h.Exec({ container_id: stopped.id, cmd: ['true'], stdout: true, stdin: false, stderr: false, tty: false }, ctx()),
    ).rejects.toMatchObject({
      kind: 'failed-precondition',
    });
  });
});

// ---- Exec / Attach over SPDY ----------------------------------------------------

describe('Exec over SPDY', () => {
  it('validates the request', async () => {
    const base = { container_id: worker, cmd: ['true'], tty: false, stdin: false, stdout: false, stderr: false };
    await expect(h.Exec(base, ctx())).rejects.toMatchObject({ kind: 'invalid-argument' });
    await expect(h.Exec({ ...base, stdout: true, stderr: true, tty: true }, ctx())).rejects.toMatchObject({
      kind: 'invalid-argument',
    });
  });

  it('runs a command without tty, stdin echoed back, success status', async () => {
    const r = await spdyRemote(
      await execUrl(worker, ['sh', '-c', 'cat; echo done >&2'], { stdin: true, stderr: true }),
      { stdin: true, stderr: true },
    );
    expect(r.client.protocol).toBe('v4.channel.k8s.io');
    r.stdin!.end('hello from stdin\n');
    const out = await finishRemote(r);
    expect(out.stdout).toBe('hello from stdin\n');
    expect(out.stderr).toBe('done\n');
    expect(JSON.parse(out.error)).toEqual({ metadata: {}, status: 'Success' });
  });

  it('surfaces a non-zero exit code as a v4 Status', async () => {
    const r = await spdyRemote(await execUrl(worker, ['sh', '-c', 'exit 7']), { stderr: true });
    const out = await finishRemote(r);
    const st = JSON.parse(out.error);
    expect(st).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '7' }] },
    });
    expect(st.message).toMatch(/^command terminated with non-zero exit code: /);
  });

  it('speaks v2 when the client only offers it (text error, no status on success)', async () => {
    const r = await spdyRemote(await execUrl(worker, ['sh', '-c', 'echo v2; exit 2']), {
      stderr: true,
      protocols: ['v2.channel.k8s.io'],
    });
    expect(r.client.protocol).toBe('v2.channel.k8s.io');
    const out = await finishRemote(r);
    expect(out.stdout).toBe('v2\n');
    expect(out.error).toMatch(/non-zero exit code/);
  });

  it('runs with a tty and applies resize', async () => {
    const url = await execUrl(
      worker,
      ['sh', '-c', 'until [ "$(stty size)" = "45 123" ]; do sleep 0.1; done; echo RESIZED; stty size'],
      { tty: true },
    );
    const r = await spdyRemote(url, { tty: true });
    r.resize!.write(JSON.stringify({ Width: 123, Height: 45 }) + '\n');
    const out = await finishRemote(r);
    expect(out.stdout).toContain('RESIZED');
    expect(out.stdout).toContain('45 123');
    expect(JSON.parse(out.error).status).toBe('Success');
  });

  it('tty with stdin: interactive shell', async () => {
    const r = await spdyRemote(await execUrl(worker, ['sh'], { tty: true, stdin: true }), { tty: true, stdin: true });
    r.stdin!.write('echo $((6*7))\nexit 0\n');
    const out = await finishRemote(r);
    expect(out.stdout).toContain('42');
  });

  it('rejects a reused or unknown token without starting anything', async () => {
    const url = await execUrl(worker, ['sh', '-c', 'echo once']);
    const out = await finishRemote(await spdyRemote(url, { stderr: true }));
    expect(out.stdout).toBe('once\n');
    await expect(spdyRemote(url, { stderr: true })).rejects.toMatchObject({ statusCode: 404 });
    await expect(spdyRemote(url.replace(/[^/]+$/, 'AAAAAAAAAAAAAAAAAAAAAA'), { stderr: true })).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  it('refuses (401) a token that expired before it was redeemed, and starts nothing', async () => {
    const shortLived = await startStreamingServer({
      bindAddress: '127.0.0.1',
      port: 0,
      docker: new DockerodeEngine(docker),
      logger,
      tokenTtlMs: 200,
    });
    try {
      const url = shortLived.issueUrl({
        kind: 'exec',
        containerId: worker,
        cmd: ['sh', '-c', 'echo expired-ran >&2; sleep 302'],
        tty: false,
        stdin: false,
        stdout: true,
        stderr: true,
      });
      await sleep(600);
      // 401 "token expired"; 404 if the server's sweep dropped it first (a slow machine can sleep past it)
      const refused = await spdyRemote(url, { stderr: true }).then(
        () => 0,
        (err: { statusCode?: number }) => err.statusCode,
      );
      expect([401, 404]).toContain(refused);
      // a token is single-use even when it failed: the retry is unknown
      await expect(spdyRemote(url, { stderr: true })).rejects.toMatchObject({ statusCode: 404 });
      expect(await psOutput(worker)).not.toContain('sleep 302');
    } finally {
      await shortLived.close();
    }
  });

  it('kills the exec process when the client disconnects mid-stream', async () => {
    const r = await spdyRemote(await execUrl(worker, ['sh', '-c', 'echo started; sleep 303; echo never']), {
      stderr: true,
    });
    await new Promise<void>((resolve) => r.stdout!.once('data', () => resolve()));
    r.client.socket.destroy();
    await eventually(async () => !(await psOutput(worker)).includes('sleep 303'), 'sleep 303 gone');
    await eventually(async () => streaming.openConnections === 0, 'server sockets closed');
  });

  it('runs 20 sessions at once', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) =>
        finishRemote(await spdyRemote(await execUrl(worker, ['sh', '-c', `echo session-${i}`]), { stderr: true })),
      ),
    );
    results.forEach((r, i) => expect(r.stdout).toBe(`session-${i}\n`));
  });
});

describe('Attach over SPDY', () => {
  it('streams the output of a running container and leaves it running on detach', async () => {
    const id = await runContainer(['sh', '-c', 'i=0; while true; do echo line$i; i=$((i+1)); sleep 0.1; done']);
    const { url = '' } = await h.Attach(
      { container_id: id, stdin: false, stdout: true, stderr: true, tty: false },
      ctx(),
    );
    const r = await spdyRemote(url, { stderr: true });
    let seen = '';
    await new Promise<void>((resolve) =>
      r.stdout!.on('data', (d: Buffer) => {
        seen += d.toString();
        if ((seen.match(/line\d+\n/g) ?? []).length >= 3) resolve();
      }),
    );
    r.client.socket.destroy();
    expect(seen).toMatch(/line\d+\nline\d+\nline\d+\n/);
    await sleep(200);
    expect((await docker.getContainer(id).inspect()).State.Running).toBe(true);
  });

  it('attaches stdin of an OpenStdin container', async () => {
    const id = await runContainer(['cat'], { OpenStdin: true, StdinOnce: false, AttachStdin: true });
    const { url = '' } = await h.Attach(
      { container_id: id, stdin: true, stdout: true, stderr: false, tty: false },
      ctx(),
    );
    const r = await spdyRemote(url, { stdin: true });
    let seen = '';
    const got = new Promise<void>((resolve) =>
      r.stdout!.on('data', (d: Buffer) => {
        seen += d.toString();
        if (seen.includes('ping-attach')) resolve();
      }),
    );
    r.stdin!.write('ping-attach\n');
    await got;
    r.client.socket.destroy();
  });
});

// ---- WebSocket ------------------------------------------------------------------

describe('Exec over WebSocket', () => {
  it('v5: stdin, close signal, exit status', async () => {
    const url = (await execUrl(worker, ['sh', '-c', 'cat; exit 5'], { stdin: true, stderr: true })).replace(
      /^http/,
      'ws',
    );
    const ws = new WebSocket(url, ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
    const chans = new Map<number, Buffer[]>();
    ws.on('message', (d: Buffer) => {
      const list = chans.get(d[0]) ?? [];
      list.push(d.subarray(1));
      chans.set(d[0], list);
    });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    expect(ws.protocol).toBe('v5.channel.k8s.io');
    ws.send(Buffer.concat([Buffer.from([0]), Buffer.from('via websocket\n')]));
    ws.send(Buffer.from([255, 0])); // stdin EOF: without it cat never ends
    await new Promise((resolve) => ws.once('close', resolve));
    const text = (ch: number): string => Buffer.concat(chans.get(ch) ?? []).toString();
    expect(text(1)).toBe('via websocket\n');
    expect(JSON.parse(text(3))).toMatchObject({
      status: 'Failure',
      details: { causes: [{ reason: 'ExitCode', message: '5' }] },
    });
  });
});

// ---- PortForward ------------------------------------------------------------------

describe('PortForward', () => {
  let pod: string;
  beforeAll(async () => {
    // a pod with its own network namespace echoing every connection on 8080
    // busybox `nc -ll` resets connections that arrive while it re-arms (seen with 20 at
    // once straight to the pod IP, without crishim): one echo listener per port instead
    // labelled as a sandbox, the only kind of container PortForward accepts
    pod = await runContainer(['sh', '-c', 'for p in $(seq 8080 8099); do nc -ll -p $p -e cat & done; wait'], {
      Labels: { [TYPE_LABEL]: TYPE_SANDBOX },
    });
    await eventually(async () => {
      // straight through Docker: ExecSync refuses a sandbox's container, as it does the pause container
      const e = await docker
        .getContainer(pod)
        .exec({ Cmd: ['sh', '-c', '[ "$(netstat -ltn | grep -c ":80[89][0-9] ")" -ge 20 ]'], AttachStdout: true });
      const out = await e.start({});
      out.resume();
      await new Promise((r) => out.once('end', r));
      return (await e.inspect()).ExitCode === 0;
    }, 'pod listening on 8080-8099');
  });

  async function spdyForward(
    client: SpdyClient,
    requestID: string,
    port: number,
    payload: Buffer,
  ): Promise<{ data: Buffer; error: string }> {
    const error = await openStream(client.conn, { streamType: 'error', port: String(port), requestID });
    error.end();
    const data = await openStream(client.conn, { streamType: 'data', port: String(port), requestID });
    const received = collect(data);
    const errText = collect(error);
    data.end(payload);
    return { data: await received, error: (await errText).toString() };
  }

  const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

  it('transfers 10 MiB both ways over SPDY with matching checksums', async () => {
    const { url = '' } = await h.PortForward({ pod_sandbox_id: pod, port: [8080] }, ctx());
    const client = await spdyUpgrade(url, ['portforward.k8s.io']);
    expect(client.protocol).toBe('portforward.k8s.io');
    const payload = randomBytes(10 * 1024 * 1024);
    const r = await spdyForward(client, '0', 8080, payload);
    expect(r.data.length).toBe(payload.length);
    expect(md5(r.data)).toBe(md5(payload));
    expect(r.error).toBe('');
    client.socket.destroy();
  });

  it('handles 20 concurrent connections and reports a closed port on the error stream', async () => {
    const { url = '' } = await h.PortForward({ pod_sandbox_id: pod, port: [] }, ctx());
    const client = await spdyUpgrade(url, ['portforward.k8s.io']);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => {
        // under spdy-transport's 64 KiB stream window: the test client enforces it, client-go (crictl, kubelet) does not
        const payload = randomBytes(48 * 1024);
        return spdyForward(client, String(i), 8080 + i, payload).then((r) => ({
          ok: md5(r.data) === md5(payload),
          error: r.error,
        }));
      }),
    );
    expect(results.every((r) => r.ok && r.error === '')).toBe(true);
    const refused = await spdyForward(client, 'refused', 9999, Buffer.from('x'));
    expect(refused.error).toMatch(/9999/);
    client.socket.destroy();
    await eventually(async () => streaming.openConnections === 0, 'server sockets closed');
  });

  it('forwards over WebSocket with port frames first', async () => {
    const { url = '' } = await h.PortForward({ pod_sandbox_id: pod, port: [8080] }, ctx());
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}?port=8080`, ['v4.channel.k8s.io']);
    const data: Buffer[] = [];
    const firstFrames: Buffer[] = [];
    const payload = randomBytes(512 * 1024);
    const done = new Promise<void>((resolve) =>
      ws.on('message', (d: Buffer) => {
        if (d[0] === 0 && firstFrames.length < 2 && d.length === 3 && !data.length) {
          firstFrames.push(d);
          return;
        }
        if (d[0] === 1 && d.length === 3 && firstFrames.length < 2) {
          firstFrames.push(d);
          return;
        }
        if (d[0] === 0) data.push(d.subarray(1));
        if (Buffer.concat(data).length >= payload.length) resolve();
      }),
    );
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.send(Buffer.concat([Buffer.from([0]), payload]));
    await done;
    expect(firstFrames.map((f) => f.readUInt16LE(1))).toEqual([8080, 8080]);
    expect(md5(Buffer.concat(data))).toBe(md5(payload));
    ws.close();
  });

  it('rejects an unknown pod', async () => {
    await expect(h.PortForward({ pod_sandbox_id: 'e'.repeat(64), port: [80] }, ctx())).rejects.toMatchObject({
      kind: 'not-found',
    });
  });

  it('rejects a container that is not a pod sandbox, naming it', async () => {
    // `worker` is running and has its own network namespace: only the missing sandbox label stops it
    await expect(h.PortForward({ pod_sandbox_id: worker, port: [8080] }, ctx())).rejects.toMatchObject({
      kind: 'not-found',
      message: expect.stringContaining(`pod sandbox ${worker}`),
    });
  });
});
