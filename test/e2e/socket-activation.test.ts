import { spawn, type ChildProcess } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as grpc from '@grpc/grpc-js';
import { call, REPO } from './harness';
import { loadCriProto } from '../support/cri-proto';
import type { RuntimeServiceClient } from '../../src/generated/runtime/v1/RuntimeService';

jest.setTimeout(60_000);

describe('systemd socket activation (fd://)', () => {
  let dir: string;
  let activator: ChildProcess | undefined;
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-sd-'));
  });
  afterAll(async () => {
    // the daemon writes its state while it shuts down: removing the directory under it failed (ENOTEMPTY)
    if (activator && activator.exitCode === null && activator.signalCode === null) {
      const exited = new Promise((r) => activator?.once('exit', r));
      activator.kill('SIGTERM');
      await exited;
    }
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('answers a client that connected before the daemon started', async () => {
    const socket = path.join(dir, 'crishim.sock');
    // systemd-socket-activate listens, then starts crishim on the first connection with LISTEN_FDS=1
    activator = spawn(
      'systemd-socket-activate',
      [
        '-l',
        socket,
        process.execPath,
        path.join(REPO, 'dist', 'main.js'),
        '--container-runtime-endpoint',
        'fd://',
        '--root-directory',
        path.join(dir, 'root'),
        '--network-plugin',
        'none',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    activator.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    for (let i = 0; i < 100; i++) {
      if (
        await fsp.stat(socket).then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const proto = loadCriProto();
    const client = new proto.runtime.v1.RuntimeService(
      `unix://${socket}`,
      grpc.credentials.createInsecure(),
    ) as unknown as RuntimeServiceClient;
    try {
      // the first call is what makes the activator start crishim
      const v = await call(client, 'Version', {}, 30_000);
      expect(v.runtime_name).toBe('docker');
      expect(stderr).toMatch(/listening on the socket-activated fd/);
    } finally {
      client.close();
    }
  });
});
