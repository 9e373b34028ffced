import { toNetwork } from '../../src/cri/stats-convert';
import type { InterfaceUsage } from '../../src/stats/netdev';

const usage = (name: string, rx: number): InterfaceUsage => ({
  name,
  rxBytes: rx,
  rxErrors: 0,
  txBytes: rx * 2,
  txErrors: 1,
});

describe("a pod's network usage in CRI form", () => {
  it('is absent when the netns has no interface yet or any more: a kubelet reads default_interface whenever network is set', () => {
    expect(toNetwork('1', [])).toBeNull();
    expect(toNetwork('1', undefined)).toBeNull();
  });

  it('names eth0 the default interface wherever it is listed, and lists every interface', () => {
    const net = toNetwork('5', [usage('net1', 10), usage('eth0', 20)]);
    expect(net?.default_interface).toEqual({
      name: 'eth0',
      rx_bytes: { value: 20 },
      rx_errors: { value: 0 },
      tx_bytes: { value: 40 },
      tx_errors: { value: 1 },
    });
    expect(net?.interfaces?.map((i) => i.name)).toEqual(['net1', 'eth0']);
    expect(net?.timestamp).toBe('5');
  });

  it('takes the first interface as default when there is no eth0', () => {
    expect(toNetwork('5', [usage('net1', 10)])?.default_interface?.name).toBe('net1');
  });
});
