import { execFileSync, spawn, type ChildProcess } from 'child_process';
import { existsSync, promises as fsp } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { prepareSocket, socketAnswers } from '../../src/server/socket';
import { createLogger } from '../../src/logging/logger';

/** What a connect attempt ended in: 'connect' or the error code. */
function connectOutcome(socketPath: string, open: net.Socket[]): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect(socketPath);
    open.push(sock);
    sock.once('connect', () => resolve('connect'));
    sock.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

describe('a live daemon keeps its socket', () => {
  let dir: string;
  let busy: ChildProcess | undefined;
  const open: net.Socket[] = [];
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-socket-'));
  });
  afterAll(async () => {
    open.forEach((s) => s.destroy());
    busy?.kill('SIGKILL');
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('is not taken over while its accept queue is full', async () => {
    const sock = path.join(dir, 'busy.sock');
    // a daemon whose event loop is held up (a burst, a long GC): it listens, accepts nothing
    busy = spawn(
      process.execPath,
      [
        '-e',
        `require('net').createServer().listen({ path: ${JSON.stringify(sock)}, backlog: 1 }, () => {
           console.log('up');
           for (const end = Date.now() + 60000; Date.now() < end; );
         })`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise((r) => busy?.stdout?.once('data', r));
    const outcomes: string[] = [];
    while (outcomes.length < 10 && !outcomes.includes('EAGAIN')) outcomes.push(await connectOutcome(sock, open));
    // the kernel refuses further connections the way it does for a full queue
    expect(outcomes).toContain('EAGAIN');

    await expect(socketAnswers(sock)).resolves.toBe(true);
    await expect(prepareSocket(sock, createLogger('error', 'text'))).rejects.toThrow(/already serving/);
    expect(existsSync(sock)).toBe(true);
  });

  it('replaces a socket file nobody listens on', async () => {
    const sock = path.join(dir, 'stale.sock');
    // what a crashed daemon leaves: the file of a socket whose process is gone
    execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', sock]);
    await expect(socketAnswers(sock)).resolves.toBe(false);
    await prepareSocket(sock, createLogger('error', 'text'));
    expect(existsSync(sock)).toBe(false);
  });

  it('refuses a path longer than a Unix socket address, which Node would bind cut short', async () => {
    const sock = path.join(dir, 'deeper', 'x'.repeat(120) + '.sock');
    await expect(prepareSocket(sock, createLogger('error', 'text'))).rejects.toThrow(/longer than a Unix socket path/);
    // refused before anything was made for it
    expect(existsSync(path.dirname(sock))).toBe(false);
  });
});
