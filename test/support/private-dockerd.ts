/**
 * A second Docker Engine of one test file's own, for tests that must stop,
 * restart or reconfigure Docker: the shared dockerd is never touched. It has its
 * own data root, exec root, pid file, config file and bridge (so it cannot touch
 * docker0), no iptables rules, and is handed the images a test needs.
 */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import Docker from 'dockerode';

export interface PrivateDockerdOptions {
  /** Bridge name, unique per test file. */
  bridge: string;
  /** Also listen on 127.0.0.1:<port> (random) and talk to it there. */
  tcp?: boolean;
  /** Images copied from `from` once the engine is up. */
  images: string[];
  from: Docker;
}

export interface PrivateDockerd {
  dir: string;
  /** unix:// endpoint of its socket. */
  socketEndpoint: string;
  /** tcp:// endpoint (with `tcp`). */
  tcpEndpoint?: string;
  /** A client of it (over TCP with `tcp`, else its socket). */
  api: Docker;
  /** The daemon.json it reads (a SIGHUP reloads it). */
  configFile: string;
  /** Stops the engine (SIGTERM; its containers die with it). */
  stop(): Promise<void>;
  /** Starts it again after stop() and waits until it answers. */
  start(): Promise<void>;
  restart(): Promise<void>;
  signal(sig: NodeJS.Signals): void;
  /** Removes its containers, stops it and removes its bridge and files. */
  close(): Promise<void>;
}

async function waitUntilUp(api: Docker, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await api.ping();
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`the private dockerd did not answer within ${ms} ms: ${(err as Error).message}`, {
          cause: err,
        });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function startPrivateDockerd(opts: PrivateDockerdOptions): Promise<PrivateDockerd> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), `crishim-${opts.bridge}-`));
  const port = opts.tcp ? 20000 + Math.floor(Math.random() * 10000) : undefined;
  const socket = path.join(dir, 'docker.sock');
  const configFile = path.join(dir, 'daemon.json');
  try {
    execFileSync('ip', ['link', 'add', opts.bridge, 'type', 'bridge']);
  } catch {
    /* left from an earlier run */
  }
  execFileSync('ip', ['link', 'set', opts.bridge, 'up']);
  await fsp.writeFile(configFile, '{}\n');

  let proc: ChildProcess | undefined;
  const launch = (): ChildProcess =>
    spawn(
      'dockerd',
      [
        ...(port ? ['--host', `tcp://127.0.0.1:${port}`] : []),
        // a socket too: crishim on it counts Docker as local and reads its json-files itself
        '--host',
        `unix://${socket}`,
        '--data-root',
        path.join(dir, 'data'),
        '--exec-root',
        path.join(dir, 'exec'),
        '--pidfile',
        path.join(dir, 'dockerd.pid'),
        '--config-file',
        configFile,
        '--bridge',
        opts.bridge,
        '--iptables=false',
        '--ip-masq=false',
      ],
      { stdio: 'ignore' },
    );
  const api = port ? new Docker({ host: '127.0.0.1', port, protocol: 'http' }) : new Docker({ socketPath: socket });

  const d: PrivateDockerd = {
    dir,
    socketEndpoint: `unix://${socket}`,
    tcpEndpoint: port ? `tcp://127.0.0.1:${port}` : undefined,
    api,
    configFile,
    async stop() {
      const p = proc;
      if (!p || p.exitCode !== null || p.signalCode !== null) return;
      p.kill('SIGTERM');
      await new Promise((r) => p.once('exit', r));
    },
    async start() {
      proc = launch();
      await waitUntilUp(api);
    },
    async restart() {
      await d.stop();
      await d.start();
    },
    signal(sig) {
      proc?.kill(sig);
    },
    async close() {
      for (const c of await api.listContainers({ all: true }).catch(() => []))
        await api
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => undefined);
      await d.stop();
      // a dockerd stopped while a container runs leaves its own netns mounted, which rm cannot remove
      try {
        execFileSync('umount', ['-l', path.join(dir, 'exec', 'netns', 'default')], { stdio: 'ignore' });
      } catch {
        /* not mounted */
      }
      try {
        execFileSync('ip', ['link', 'del', opts.bridge], { stdio: 'ignore' });
      } catch {
        /* already gone */
      }
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
  await d.start();
  for (const image of opts.images) await api.loadImage(await opts.from.getImage(image).get());
  return d;
}
