import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { dockerOptions } from '../../src/docker/client';

/** A directory with the three PEM files the Docker CLI looks for (contents only need to be recognisable). */
async function certDir(tag: string): Promise<string> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-tls-'));
  for (const f of ['ca', 'cert', 'key']) await fsp.writeFile(path.join(dir, `${f}.pem`), `${tag}-${f}`);
  return dir;
}

const text = (b: unknown): string => String(b);

describe('Docker TLS options', () => {
  const dirs: string[] = [];
  const dirOf = async (tag: string): Promise<string> => {
    const d = await certDir(tag);
    dirs.push(d);
    return d;
  };
  afterAll(() => Promise.all(dirs.map((d) => fsp.rm(d, { recursive: true, force: true }))));

  it('reads the files --docker-tls-* name and speaks https on 2376', async () => {
    const d = await dirOf('flag');
    const o = dockerOptions({
      endpoint: 'tcp://127.0.0.1',
      tlsCa: path.join(d, 'ca.pem'),
      tlsCert: path.join(d, 'cert.pem'),
      tlsKey: path.join(d, 'key.pem'),
      env: {},
    });
    expect(o).toMatchObject({ host: '127.0.0.1', port: 2376, protocol: 'https' });
    expect([o.ca, o.cert, o.key].map(text)).toEqual(['flag-ca', 'flag-cert', 'flag-key']);
  });

  it('uses DOCKER_CERT_PATH when DOCKER_TLS_VERIFY is set, and the flags over it', async () => {
    const env = await dirOf('env');
    const flag = await dirOf('flag');
    const o = dockerOptions({
      endpoint: 'tcp://10.0.0.1:2376',
      env: { DOCKER_CERT_PATH: env, DOCKER_TLS_VERIFY: '1' },
    });
    expect(o).toMatchObject({ host: '10.0.0.1', port: 2376, protocol: 'https' });
    expect([o.ca, o.cert, o.key].map(text)).toEqual(['env-ca', 'env-cert', 'env-key']);
    const mixed = dockerOptions({
      endpoint: 'tcp://10.0.0.1:2376',
      tlsCa: path.join(flag, 'ca.pem'),
      env: { DOCKER_CERT_PATH: env, DOCKER_TLS_VERIFY: '1' },
    });
    expect([mixed.ca, mixed.cert].map(text)).toEqual(['flag-ca', 'env-cert']);
  });

  it('takes DOCKER_HOST with the TLS environment when no endpoint flag is given', async () => {
    const env = await dirOf('host');
    const o = dockerOptions({
      env: { DOCKER_HOST: 'tcp://[::1]:2999', DOCKER_CERT_PATH: env, DOCKER_TLS_VERIFY: 'true' },
    });
    expect(o).toMatchObject({ host: '::1', port: 2999, protocol: 'https' });
    expect(text(o.ca)).toBe('host-ca');
  });

  it('stays on plain http when DOCKER_TLS_VERIFY is unset, empty or 0', async () => {
    const env = await dirOf('off');
    for (const verify of [undefined, '', '0']) {
      const o = dockerOptions({
        endpoint: 'tcp://127.0.0.1:2375',
        env: { DOCKER_CERT_PATH: env, DOCKER_TLS_VERIFY: verify },
      });
      expect(o).toEqual({ host: '127.0.0.1', port: 2375, protocol: 'http' });
    }
  });

  it('looks in ~/.docker when DOCKER_TLS_VERIFY is set without DOCKER_CERT_PATH, as the Docker CLI does', async () => {
    const home = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-home-'));
    dirs.push(home);
    const dotDocker = await dirOf('home');
    await fsp.rename(dotDocker, path.join(home, '.docker'));
    const o = dockerOptions({ endpoint: 'tcp://127.0.0.1:2376', env: { HOME: home, DOCKER_TLS_VERIFY: '1' } });
    expect(o.protocol).toBe('https');
    expect([o.ca, o.cert, o.key].map(text)).toEqual(['home-ca', 'home-cert', 'home-key']);
  });

  it('names the file it cannot read', () => {
    expect(() =>
      dockerOptions({
        endpoint: 'tcp://127.0.0.1:2376',
        env: { DOCKER_CERT_PATH: '/nonexistent/certs', DOCKER_TLS_VERIFY: '1' },
      }),
    ).toThrow(/CA certificate \/nonexistent\/certs\/ca\.pem/);
  });

  it('never applies TLS to a unix socket', () => {
    expect(dockerOptions({ endpoint: 'unix:///run/d.sock', env: { DOCKER_TLS_VERIFY: '1' } })).toEqual({
      socketPath: '/run/d.sock',
    });
  });
});
