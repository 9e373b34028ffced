/** A throwaway Debian docker-registry on 127.0.0.1 for pull tests (optionally with basic auth). */
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { promises as fsp } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

export interface Registry {
  host: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export async function startRegistry(auth?: { user: string; password: string }): Promise<Registry> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-registry-'));
  const port = await freePort();
  const lines = [
    'version: 0.1',
    'log:',
    '  level: warn',
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
  const proc: ChildProcess = spawn('docker-registry', ['serve', path.join(dir, 'config.yml')], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    host: `127.0.0.1:${port}`,
    async stop() {
      proc.kill('SIGTERM');
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
}
