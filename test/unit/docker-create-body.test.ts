import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { promises as fsp } from 'fs';
import Docker from 'dockerode';
import { createOptionsInBodyOnly } from '../../src/docker/client';
import { fromDockerError } from '../../src/docker/errors';

/** A stand-in dockerd on a Unix socket that records what a create request carried where. */
describe('container create options travel in the body only', () => {
  let dir: string;
  let server: http.Server;
  const seen: Array<{ url: string; body: string }> = [];
  beforeAll(async () => {
    dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-modem-'));
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        seen.push({ url: req.url ?? '', body });
        res.writeHead(201, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ Id: 'f'.repeat(64), Warnings: [] }));
      });
    });
    await new Promise<void>((r) => server.listen(path.join(dir, 'docker.sock'), r));
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('puts the name in the query and env, labels and host config in the body alone', async () => {
    const api = createOptionsInBodyOnly(new Docker({ socketPath: path.join(dir, 'docker.sock') }));
    const ac = new AbortController();
    await api.createContainer({
      name: 'k8s_app_pod',
      Image: 'busybox',
      Env: ['TOKEN=s3cret-value'],
      Labels: { team: 'a' },
      abortSignal: ac.signal,
    });
    const req = seen.at(-1)!;
    expect(req.url).toMatch(/\/containers\/create\?name=k8s_app_pod$/);
    expect(req.url).not.toContain('s3cret');
    const body = JSON.parse(req.body) as Record<string, unknown>;
    expect(body.Env).toEqual(['TOKEN=s3cret-value']);
    expect(body.Labels).toEqual({ team: 'a' });
    expect(body).not.toHaveProperty('name');
    expect(body).not.toHaveProperty('abortSignal');
  });

  it('maps an oversized request to INVALID_ARGUMENT, not UNKNOWN', () => {
    expect(fromDockerError({ statusCode: 431, message: '(HTTP code 431) unexpected' }, 'CreateContainer x').kind).toBe(
      'invalid-argument',
    );
    expect(fromDockerError({ statusCode: 413, message: 'too large' }).kind).toBe('invalid-argument');
  });
});
