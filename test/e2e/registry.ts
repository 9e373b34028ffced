/**
 * A throwaway Debian `docker-registry` on 127.0.0.1 for pull tests, optionally with basic
 * auth (an htpasswd bcrypt entry made by `htpasswd -Bbn`, from apache2-utils). Docker trusts
 * plain HTTP on 127.0.0.0/8, so no TLS is needed. Its access log is kept, so tests can count
 * what really reached the registry.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { promises as fsp, openSync, closeSync } from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

export interface Registry {
  /** `127.0.0.1:<port>`, the registry part of image references. */
  host: string;
  /** Access-log lines (`"METHOD /v2/... HTTP/1.1" status ...`) matching `re`. */
  requests(re: RegExp): Promise<string[]>;
  stop(): Promise<void>;
}

/** A TCP port nobody listens on at the moment, on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** Status of GET /v2/ (200 open, 401 with auth), or 0 while nothing answers. */
function probe(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/v2/', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

export async function startRegistry(auth?: { user: string; password: string }): Promise<Registry> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-registry-'));
  const port = await freePort();
  const logFile = path.join(dir, 'registry.log');
  const lines = [
    'version: 0.1',
    'log:',
    '  level: info',
    '  accesslog: { disabled: false }',
    'storage:',
    `  filesystem: { rootdirectory: ${dir}/data }`,
    '  delete: { enabled: true }',
    'http:',
    `  addr: 127.0.0.1:${port}`,
  ];
  if (auth) {
    const entry = execFileSync('htpasswd', ['-Bbn', auth.user, auth.password], { encoding: 'utf8' });
    await fsp.writeFile(path.join(dir, 'htpasswd'), entry);
    lines.push('auth:', '  htpasswd:', '    realm: crishim-test', `    path: ${dir}/htpasswd`);
  }
  await fsp.writeFile(path.join(dir, 'config.yml'), lines.join('\n') + '\n');
  const fd = openSync(logFile, 'a');
  const proc: ChildProcess = spawn('docker-registry', ['serve', path.join(dir, 'config.yml')], {
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));

  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await fsp.rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 10_000;
  let code = 0;
  while (Date.now() < deadline && proc.exitCode === null) {
    code = await probe(port);
    if (code === 200 || code === 401) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (code !== 200 && code !== 401) {
    const log = await fsp.readFile(logFile, 'utf8').catch(() => '');
    await stop();
    throw new Error(
      `docker-registry did not come up on 127.0.0.1:${port} (last status ${code}); log:\n${log.slice(-2000)}`,
    );
  }

  return {
    host: `127.0.0.1:${port}`,
    async requests(re) {
      const log = await fsp.readFile(logFile, 'utf8');
      return log.split('\n').filter((l) => l.startsWith('127.0.0.1 - ') && re.test(l));
    },
    stop,
  };
}

export interface StallingProxy {
  host: string;
  /** Blob downloads that arrived and are being held, and how many of them the client has since closed. */
  held(): { open: number; closed: number };
  stop(): Promise<void>;
}

/**
 * An HTTP proxy in front of `reg` that answers everything but blob downloads, which it holds
 * forever: a pull through it gets its manifest and then hangs mid-download, which is where a
 * cancelled pull must make dockerd drop the connection.
 */
export async function startStallingProxy(reg: Registry): Promise<StallingProxy> {
  const [targetHost, targetPort] = reg.host.split(':');
  let open = 0;
  let closed = 0;
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && /\/blobs\/sha256:/.test(req.url ?? '')) {
      open += 1;
      req.socket.once('close', () => (closed += 1));
      return; // never answered
    }
    const up = http.request(
      { host: targetHost, port: Number(targetPort), method: req.method, path: req.url, headers: req.headers },
      (ures) => {
        res.writeHead(ures.statusCode ?? 502, ures.headers);
        ures.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    host: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    held: () => ({ open, closed }),
    async stop() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
