/**
 * Runtime configuration against the real engine and CNI plugins: the pod CIDR of
 * UpdateRuntimeConfig reaching host-local through the shipped conflist, its
 * validation, and RuntimeConfig when Docker's cgroup driver cannot be known.
 */
import { execFileSync } from 'child_process';
import * as http from 'http';
import type { AddressInfo } from 'net';
import { status } from '@grpc/grpc-js';
import { call, codeOf, containersOfPod, podConfig, reservedIps, startCrishim, teardown, type Crishim } from './harness';

jest.setTimeout(180_000);

/** The address as a 32-bit number, for range checks. */
const ipv4 = (ip: string): number => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
const inCidr = (ip: string, cidr: string): boolean => {
  const [net, bits] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipv4(ip) / size) === Math.floor(ipv4(net) / size);
};

describe('UpdateRuntimeConfig pod CIDR', () => {
  let h: Crishim | undefined;
  beforeAll(async () => {
    h = await startCrishim({ subnetIndex: 234 });
  });
  afterAll(() => teardown(h));

  it('hands the pod CIDR to host-local: new sandboxes get an address inside it', async () => {
    const crishim = h as Crishim;
    const podCidr = '10.88.234.128/25';
    await call(crishim.runtime, 'UpdateRuntimeConfig', { runtime_config: { network_config: { pod_cidr: podCidr } } });
    const config = podConfig('pod-cidr');
    const { pod_sandbox_id: id } = await call(crishim.runtime, 'RunPodSandbox', { config });
    try {
      const ip = (await call(crishim.runtime, 'PodSandboxStatus', { pod_sandbox_id: id })).status?.network?.ip ?? '';
      expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      // the configured subnet is 10.88.234.0/24, whose first addresses host-local would hand out otherwise
      expect(inCidr(ip, podCidr)).toBe(true);
      expect(inCidr(ip, '10.88.0.0/16')).toBe(true);
      expect(await reservedIps(crishim.cni.ipamDir)).toEqual([ip]);
      // and it is reachable: the bridge got the range's gateway
      expect(() => execFileSync('ping', ['-c', '1', '-W', '3', ip], { stdio: 'ignore' })).not.toThrow();
    } finally {
      await call(crishim.runtime, 'StopPodSandbox', { pod_sandbox_id: id });
      await call(crishim.runtime, 'RemovePodSandbox', { pod_sandbox_id: id });
    }
    expect(await containersOfPod((config.metadata as { uid: string }).uid)).toEqual([]);
    expect(await reservedIps(crishim.cni.ipamDir)).toEqual([]);
  });

  it.each([
    '10.88.256.0/24',
    '10.88.0.0/33',
    '10.88.0/24',
    '10.88.0.0',
    '10.88.0.0/-1',
    '010.88.0.0/16',
    '10.88.0.0/016',
    '10.88.0.0/16,',
    '10.88.0.0/16,10.89.0.0/16',
    'fd00::/129',
    'fd00::zz/64',
    'fe80::1%eth0/64',
    '10.88.0.0/16,fd00::/64,fd01::/64',
  ])('refuses %s with INVALID_ARGUMENT naming the field', async (podCidr) => {
    const r = await codeOf(
      call((h as Crishim).runtime, 'UpdateRuntimeConfig', {
        runtime_config: { network_config: { pod_cidr: podCidr } },
      }),
    );
    expect(r.code).toBe(status.INVALID_ARGUMENT);
    expect(r.details).toContain('runtime_config.network_config.pod_cidr');
  });

  it.each(['10.88.234.0/24', '0.0.0.0/0', 'fd00:88::/64', '10.88.234.0/24,fd00:88::/64'])(
    'accepts %s',
    async (podCidr) => {
      await expect(
        call((h as Crishim).runtime, 'UpdateRuntimeConfig', {
          runtime_config: { network_config: { pod_cidr: podCidr } },
        }),
      ).resolves.toEqual({});
    },
  );
});

/**
 * An engine that answers ping, version and an empty list, but whose `info` has no
 * cgroup driver: crishim starts and serves, and the driver stays unknown.
 */
async function startDriverlessEngine(): Promise<{ port: number; close(): Promise<void> }> {
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const route = (req.url ?? '').replace(/^\/v[0-9.]+/, '').split('?')[0];
    const json = (body: unknown): void =>
      void res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    if (route === '/_ping') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('OK');
    if (route === '/version') return json({ Version: '99.0.0-fake', ApiVersion: '1.41', MinAPIVersion: '1.12' });
    if (route === '/info')
      return json({ ServerVersion: '99.0.0-fake', Runtimes: { runc: {} }, DefaultRuntime: 'runc' });
    if (route === '/containers/json') return json([]);
    if (route === '/events') {
      // an event stream that stays open and quiet
      res.writeHead(200, { 'Content-Type': 'application/json' });
      open.add(res);
      return;
    }
    res
      .writeHead(404, { 'Content-Type': 'application/json' })
      .end(JSON.stringify({ message: `fake engine: no ${route}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((resolve) => {
        for (const r of open) r.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('RuntimeConfig when the cgroup driver is unknown', () => {
  let h: Crishim | undefined;
  let engine: Awaited<ReturnType<typeof startDriverlessEngine>> | undefined;
  afterAll(async () => {
    await teardown(h);
    await engine?.close();
  });

  it('answers UNAVAILABLE instead of guessing cgroupfs', async () => {
    engine = await startDriverlessEngine();
    h = await startCrishim({ subnetIndex: 235, args: ['--docker-endpoint', `tcp://127.0.0.1:${engine.port}`] });
    const r = await codeOf(call(h.runtime, 'RuntimeConfig', {}));
    expect(r.code).toBe(status.UNAVAILABLE);
    expect(r.details).toMatch(/cgroup driver/);
  });
});
