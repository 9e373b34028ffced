import * as net from 'net';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { connectEngine } from '../../src/docker/connect';
import { DockerUnreachableError } from '../../src/docker/errors';
import { createLogger } from '../../src/logging/logger';

const logger = createLogger('error', 'json');

/** A unix socket that accepts connections and reads requests but never answers: a hung dockerd. */
async function silentDockerd(): Promise<{ endpoint: string; requests: () => number; close(): Promise<void> }> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-silent-'));
  const sock = path.join(dir, 'docker.sock');
  let requests = 0;
  const open = new Set<net.Socket>();
  const server = net.createServer((c) => {
    open.add(c);
    c.on('data', (d: Buffer) => (requests += (d.toString().match(/HTTP\/1\.1\r\n/g) ?? []).length));
    c.on('close', () => open.delete(c));
  });
  await new Promise<void>((r) => server.listen(sock, r));
  return {
    endpoint: `unix://${sock}`,
    requests: () => requests,
    async close() {
      for (const c of open) c.destroy();
      await new Promise((r) => server.close(r));
      await fsp.rm(dir, { recursive: true, force: true });
    },
  };
}

describe('a Docker request deadline', () => {
  it('fails a request a hung dockerd never answers, as unreachable and saying so', async () => {
    const silent = await silentDockerd();
    try {
      const t0 = Date.now();
      // the version probe at connect gives up too, so connecting itself cannot hang
      const { engine, apiVersion } = await connectEngine({ endpoint: silent.endpoint, requestTimeoutMs: 300 }, logger);
      expect(apiVersion).toBeUndefined();
      const err = await engine.ping().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DockerUnreachableError);
      expect((err as Error).message).toMatch(/ping docker.*did not answer in time: it may be hung/);
      expect(silent.requests()).toBe(2);
      expect(Date.now() - t0).toBeLessThan(5_000);
    } finally {
      await silent.close();
    }
  });
});
