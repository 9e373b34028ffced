/**
 * The CNI plugin manager's units one by one, each with fakes of its
 * collaborators (no plugin binaries, no files): config watching, the plugin
 * chain, attach, detach, the per-sandbox queue and the lazily opened cache.
 */
import winston from 'winston';
import type { NetworkConfList, ProbeResult } from '../../src/network/cni-config';
import type { CniInvocation, PluginStdin } from '../../src/network/cni-exec';
import { CniConfigWatcher, type DirWatch } from '../../src/network/config-watcher';
import { PluginChain } from '../../src/network/plugin-chain';
import { PodAttach } from '../../src/network/pod-attach';
import { PodDetach } from '../../src/network/pod-detach';
import {
  CorruptCacheEntryError,
  lazyResultCache,
  type CacheEntry,
  type ResultCache,
} from '../../src/network/result-cache';
import { KeyedQueue } from '../../src/network/sandbox-queue';
import type { PodNetworkRequest } from '../../src/network/types';

const quiet = winston.createLogger({ silent: true });
const ID = 'ab'.repeat(32);
const conf = (name: string, types: string[], file = `/etc/cni/net.d/${name}.conflist`): NetworkConfList => ({
  cniVersion: '0.4.0',
  name,
  file,
  plugins: types.map((type) => ({ type })),
});
const req = (over: Partial<PodNetworkRequest> = {}): PodNetworkRequest => ({
  podName: 'web',
  podNamespace: 'prod',
  podUid: 'uid-1',
  sandboxId: ID,
  netnsPath: '/proc/1/ns/net',
  portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }],
  ...over,
});

/** An in-memory result cache that records what was done to it. */
class FakeCache implements ResultCache {
  readonly entries = new Map<string, CacheEntry>();
  readonly ops: string[] = [];
  corrupt = false;
  async write(e: CacheEntry): Promise<void> {
    this.ops.push(`write ${e.result === undefined ? 'pending' : 'done'}`);
    this.entries.set(e.sandboxId, structuredClone(e));
  }
  async read(id: string): Promise<CacheEntry | undefined> {
    if (this.corrupt) throw new CorruptCacheEntryError(`/cache/${id}.json`, 'bad json');
    return this.entries.get(id);
  }
  async remove(id: string): Promise<void> {
    this.ops.push('remove');
    this.entries.delete(id);
  }
  async list(): Promise<string[]> {
    return [...this.entries.keys()];
  }
}

/** A fixed config source. */
const configs = (current: NetworkConfList | undefined, problem = '') => ({
  current,
  problem,
  refreshed: 0,
  refresh() {
    this.refreshed++;
  },
});

describe('CniConfigWatcher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function make(results: ProbeResult[], watchDir?: (onEvent: () => void, onGone: () => void) => DirWatch) {
    let probes = 0;
    const w = new CniConfigWatcher({
      probe: () => results[Math.min(probes++, results.length - 1)],
      watchDir: watchDir ?? (() => ({ close: () => undefined })),
      logger: quiet,
      intervalMs: 1000,
      settleMs: 100,
    });
    return { w, probes: () => probes };
  }

  it('probes at once, then on the interval, and stops when closed', () => {
    const { w, probes } = make([{ problem: 'no CNI configuration file in /x' }, { config: conf('a', ['bridge']) }]);
    expect(probes()).toBe(1);
    expect(w.problem).toMatch(/no CNI configuration file/);
    jest.advanceTimersByTime(1000);
    expect(probes()).toBe(2);
    expect(w.current?.name).toBe('a');
    expect(w.problem).toBe('');
    w.close();
    jest.advanceTimersByTime(5000);
    w.refresh();
    expect(probes()).toBe(2);
  });

  it('a burst of watch events gives one probe once it settles', () => {
    let fire: () => void = () => undefined;
    const { w, probes } = make([{ config: conf('a', ['bridge']) }], (onEvent) => {
      fire = onEvent;
      return { close: () => undefined };
    });
    for (let i = 0; i < 5; i++) fire();
    expect(probes()).toBe(1);
    jest.advanceTimersByTime(100);
    expect(probes()).toBe(2);
    w.close();
  });

  it('a missing dir is watched once it appears; a broken watch is dropped and re-attached', () => {
    let attempts = 0;
    let closed = 0;
    let gone: () => void = () => undefined;
    const { w } = make([{ problem: 'no CNI configuration directory' }], (_onEvent, onGone) => {
      if (++attempts === 1) throw new Error('ENOENT');
      gone = onGone;
      return { close: () => closed++ };
    });
    expect(attempts).toBe(1);
    jest.advanceTimersByTime(1000);
    expect(attempts).toBe(2);
    jest.advanceTimersByTime(1000);
    expect(attempts).toBe(2); // a live watch is kept
    gone();
    expect(closed).toBe(1);
    jest.advanceTimersByTime(1000);
    expect(attempts).toBe(3);
    w.close();
    expect(closed).toBe(2);
  });
});

describe('PluginChain', () => {
  function make(fail: Record<string, string> = {}) {
    const calls: Array<{ conf: PluginStdin; inv: CniInvocation }> = [];
    let between = 0;
    const chain = new PluginChain({
      exec: async (c, inv) => {
        calls.push({ conf: c, inv });
        if (fail[`${inv.command} ${c.type}`]) throw new Error(fail[`${inv.command} ${c.type}`]);
        return inv.command === 'ADD' ? { by: c.type, prev: c.prevResult } : undefined;
      },
      binDirs: ['/bin/cni'],
      timeoutMs: 1234,
      podCidr: () => '10.9.0.0/16',
      betweenAddPlugins: () => between++,
    });
    return { chain, calls, between: () => between };
  }
  const entry = (types: string[]): CacheEntry => ({
    sandboxId: ID,
    podName: 'web',
    podNamespace: 'prod',
    podUid: 'u',
    netns: '/proc/1/ns/net',
    ifName: 'eth0',
    portMappings: [],
    config: { ...conf('n', []), plugins: types.map((type) => ({ type, capabilities: { ipRanges: true } })) },
  });

  it('ADD: lo first, then the list in order with prevResult chained; the hook runs after each plugin', async () => {
    const { chain, calls, between } = make();
    const result = await chain.add(entry(['bridge', 'portmap']), undefined, quiet);
    expect(calls.map((c) => `${c.inv.command} ${c.conf.type} ${c.inv.ifName}`)).toEqual([
      'ADD loopback lo',
      'ADD bridge eth0',
      'ADD portmap eth0',
    ]);
    expect(calls[2].conf.prevResult).toEqual({ by: 'bridge', prev: undefined });
    expect(result).toEqual({ by: 'portmap', prev: { by: 'bridge', prev: undefined } });
    expect(between()).toBe(2);
    expect(calls[1].inv).toMatchObject({
      containerId: ID,
      binDirs: ['/bin/cni'],
      timeoutMs: 1234,
      args: { K8S_POD_NAME: 'web', K8S_POD_NAMESPACE: 'prod' },
    });
    expect(calls[1].conf.runtimeConfig).toEqual({ ipRanges: [[{ subnet: '10.9.0.0/16' }]] });
  });

  it('ADD stops at the first failing plugin', async () => {
    const { chain, calls } = make({ 'ADD bridge': 'no more addresses' });
    await expect(chain.add(entry(['bridge', 'portmap']), undefined, quiet)).rejects.toThrow('no more addresses');
    expect(calls.map((c) => c.conf.type)).toEqual(['loopback', 'bridge']);
  });

  it('DEL: the list in reverse, every plugin tried, the first error thrown; lo beside it, only with a netns', async () => {
    const { chain, calls } = make({ 'DEL portmap': 'first', 'DEL bridge': 'second' });
    await expect(chain.del(entry(['bridge', 'portmap']), undefined, quiet)).rejects.toThrow('first');
    expect(calls.map((c) => `${c.inv.command} ${c.conf.type}`)).toEqual(['DEL loopback', 'DEL portmap', 'DEL bridge']);
    const gone = make();
    await gone.chain.del({ ...entry(['bridge']), netns: '' }, undefined, quiet);
    expect(gone.calls.map((c) => c.conf.type)).toEqual(['bridge']);
  });
});

describe('PodAttach', () => {
  function make(addFails?: string, delFails?: string) {
    const cache = new FakeCache();
    const dels: CacheEntry[] = [];
    const cfg = configs(conf('podnet', ['bridge']));
    const attach = new PodAttach({
      configs: cfg,
      cache: async () => cache,
      chain: {
        add: async (e) => {
          // the entry is on disk before the chain runs
          expect(cache.entries.get(e.sandboxId)?.result).toBeUndefined();
          if (addFails) throw new Error(addFails);
          return { ips: [{ address: '10.1.2.3/24' }] };
        },
        del: async (e) => {
          dels.push(e);
          if (delFails) throw new Error(delFails);
        },
      },
      logger: quiet,
    });
    return { attach, cache, dels, cfg };
  }

  it('records the entry before ADD and the result after it; answers the IPs and network', async () => {
    const { attach, cache, cfg } = make();
    expect(await attach.attach(req())).toEqual({ ips: ['10.1.2.3'], networkName: 'podnet' });
    expect(cfg.refreshed).toBe(1);
    expect(cache.ops).toEqual(['write pending', 'write done']);
    expect(cache.entries.get(ID)).toMatchObject({
      netns: '/proc/1/ns/net',
      ifName: 'eth0',
      result: { ips: [{ address: '10.1.2.3/24' }] },
    });
  });

  it('a failed ADD is undone with DEL and the entry removed; the error names the pod and network', async () => {
    const { attach, cache, dels } = make('range is full');
    await expect(attach.attach(req())).rejects.toThrow(
      'set up network of pod prod/web (network podnet): range is full',
    );
    expect(dels).toHaveLength(1);
    expect(cache.entries.has(ID)).toBe(false);
  });

  it('when the undoing DEL fails too, the entry stays for the janitor', async () => {
    const { attach, cache } = make('range is full', 'cannot delete');
    await expect(attach.attach(req())).rejects.toThrow(/range is full/);
    expect(cache.entries.has(ID)).toBe(true);
  });

  it('a network that is not ready runs nothing and says why', async () => {
    const cache = new FakeCache();
    const attach = new PodAttach({
      configs: configs(undefined, 'no CNI configuration file'),
      cache: async () => cache,
      chain: { add: jest.fn(), del: jest.fn() },
      logger: quiet,
    });
    await expect(attach.attach(req())).rejects.toThrow(
      'set up network of pod prod/web: network plugin is not ready: no CNI configuration file',
    );
    expect(cache.ops).toEqual([]);
  });
});

describe('PodDetach', () => {
  function make(
    opts: { current?: NetworkConfList; delFails?: string; netnsExists?: boolean; masq?: () => Promise<string[]> } = {},
  ) {
    const cache = new FakeCache();
    const dels: CacheEntry[] = [];
    const masq: string[] = [];
    const detach = new PodDetach({
      configs: { current: opts.current, problem: opts.current ? '' : 'no config' },
      cache: async () => cache,
      chain: {
        del: async (e) => {
          dels.push(e);
          if (opts.delFails) throw new Error(opts.delFails);
        },
      },
      ipMasq: {
        needed: (c) => c.plugins.some((p) => p.type === 'bridge'),
        cleanup: async (network, id) => {
          masq.push(`${network} ${id}`);
          return (opts.masq ?? (async () => ['CNI-x']))();
        },
      },
      netnsExists: () => opts.netnsExists ?? true,
      logger: quiet,
    });
    return { detach, cache, dels, masq };
  }
  const cached = (): CacheEntry => ({
    sandboxId: ID,
    podName: 'web',
    podNamespace: 'prod',
    podUid: 'u',
    netns: '/proc/99/ns/net',
    ifName: 'eth0',
    portMappings: [],
    config: conf('old', ['bridge']),
  });

  it('DEL with the cached config and the request netns (never the cached one), then the entry goes', async () => {
    const { detach, cache, dels, masq } = make({ current: conf('new', ['other']) });
    await cache.write(cached());
    await detach.detach(req());
    expect(dels[0]).toMatchObject({ netns: '/proc/1/ns/net', config: { name: 'old' } });
    expect(masq).toEqual([]);
    expect(cache.entries.has(ID)).toBe(false);
  });

  it('without a netns: empty CNI_NETNS, and the bridge ipMasq rules are removed by hand (a failure only warns)', async () => {
    const { detach, cache, dels, masq } = make({
      netnsExists: false,
      masq: async () => Promise.reject(new Error('iptables gone')),
    });
    await cache.write(cached());
    await detach.detach(req());
    expect(dels[0].netns).toBe('');
    expect(masq).toEqual([`old ${ID}`]);
    expect(cache.entries.has(ID)).toBe(false);
  });

  it('a failed DEL keeps the entry and names the pod and network', async () => {
    const { detach, cache } = make({ delFails: 'plugin says no' });
    await cache.write(cached());
    await expect(detach.detach(req())).rejects.toThrow(
      'tear down network of pod prod/web (network old): plugin says no',
    );
    expect(cache.entries.has(ID)).toBe(true);
  });

  it('no entry: nothing runs, unless adopted (then the current config); corrupt: the current config', async () => {
    const none = make({ current: conf('cur', ['bridge']) });
    await none.detach.detach(req());
    expect(none.dels).toEqual([]);
    await none.detach.detach(req({ adopted: true }));
    expect(none.dels[0].config.name).toBe('cur');
    const corrupt = make({ current: conf('cur', ['bridge']) });
    corrupt.cache.corrupt = true;
    await corrupt.detach.detach(req());
    expect(corrupt.dels[0].config.name).toBe('cur');
    const noConfig = make();
    noConfig.cache.corrupt = true;
    await noConfig.detach.detach(req());
    expect(noConfig.dels).toEqual([]);
  });
});

describe('KeyedQueue', () => {
  it('runs one key in order (after a failure too), other keys in parallel, and forgets finished keys', async () => {
    const q = new KeyedQueue();
    const order: string[] = [];
    let release: () => void = () => undefined;
    const slow = q.run('a', () => new Promise<void>((r) => (release = r)).then(() => order.push('a1')));
    const failing = q.run('a', async () => {
      order.push('a2');
      throw new Error('boom');
    });
    const after = q.run('a', async () => order.push('a3'));
    await q.run('b', async () => order.push('b1'));
    expect(order).toEqual(['b1']);
    release();
    await slow;
    await expect(failing).rejects.toThrow('boom');
    await after;
    expect(order).toEqual(['b1', 'a1', 'a2', 'a3']);
    await new Promise((r) => setImmediate(r));
    expect(q.size).toBe(0);
  });
});

describe('lazyResultCache', () => {
  it('opens once, and again after a failed open', async () => {
    let opens = 0;
    const cache = new FakeCache();
    const get = lazyResultCache(async () => {
      if (++opens === 1) throw new Error('read-only file system');
      return cache;
    });
    await expect(get()).rejects.toThrow('read-only');
    expect(await get()).toBe(cache);
    expect(await get()).toBe(cache);
    expect(opens).toBe(2);
  });
});
