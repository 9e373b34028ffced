import { createMetrics, dockerRoute } from '../../src/server/metrics';
import { status } from '@grpc/grpc-js';

describe('docker route labels', () => {
  it.each([
    ['/v1.41/containers/json?all=1', '/containers/json'],
    ['/containers/0123abcd/json', '/containers/{id}/json'],
    ['/containers/create?name=x', '/containers/create'],
    ['/images/registry.k8s.io/pause:3.10/json', '/images/{id}/json'],
    ['/images/sha256:abc', '/images/{id}'],
    ['/images/create?fromImage=busybox', '/images/create'],
    ['/exec/77/start', '/exec/{id}/start'],
  ])('%s -> %s', (path, route) => expect(dockerRoute(path)).toBe(route));
});

describe('rpc metrics', () => {
  it('counts requests and errors by code', async () => {
    const m = createMetrics();
    m.observeRpc('Version', status.OK, 0.001);
    m.observeRpc('PodSandboxStatus', status.NOT_FOUND, 0.002);
    const text = await m.registry.metrics();
    expect(text).toContain('crishim_rpc_requests_total{method="Version",code="OK"} 1');
    expect(text).toContain('crishim_rpc_errors_total{method="PodSandboxStatus",code="NOT_FOUND"} 1');
    expect(text).not.toContain('crishim_rpc_errors_total{method="Version"');
  });
});
