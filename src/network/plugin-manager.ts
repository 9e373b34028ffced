import { existsSync, watch, type FSWatcher } from 'fs';
import { crashPoint } from '../crash-points';
import type { Logger } from '../logging/logger';
import { shortId } from '../logging/logger';
import { LOOPBACK_PLUGIN, probeConfDirSync, type NetworkConfList, type PluginConf } from './cni-config';
import { execPlugin, resultIps, type CniCommand, type PluginStdin } from './cni-exec';
import { cleanupIpMasq, needsIpMasqCleanup } from './ipmasq';
import { CorruptCacheEntryError, createResultCache, type CacheEntry, type ResultCache } from './result-cache';
import type { NetworkPlugin, NetworkStatus, PodNetworkRequest, PodNetworkResult, PortMappingSpec } from './types';

export interface NetworkPluginOptions {
  plugin: 'cni' | 'none';
  confDir: string;
  binDirs: string[];
  cacheDir: string;
  logger: Logger;
  /** Per plugin invocation; the plugin is killed after it. Default 60 s. */
  execTimeoutMs?: number;
  /** Fallback re-probe period (fs.watch does most of the work). Default 5 s. */
  probeIntervalMs?: number;
}

export const POD_IFNAME = 'eth0';
const NOT_READY = 'NetworkPluginNotReady';
/** Editors and `cp` write in several steps: probe once the burst of watch events is over. */
const WATCH_SETTLE_MS = 100;

/** `--network-plugin=none`: no pod networking beyond what Docker gives. */
function nonePlugin(): NetworkPlugin {
  return {
    name: 'none',
    status: () => ({ ready: true, reason: '', message: '' }),
    setUpPod: async () => ({ ips: [], networkName: 'none' }),
    tearDownPod: async () => undefined,
    podNetwork: async () => undefined,
    cachedSandboxes: async () => [],
    setPodCidr: () => undefined,
    close: () => undefined,
  };
}

/** Port mappings in the portmap plugin's form; an empty hostIP means "all addresses", which is the field left out. */
function cniPortMappings(mappings: PortMappingSpec[]): PortMappingSpec[] {
  return mappings
    .filter((m) => m.hostPort > 0)
    .map(({ hostPort, containerPort, protocol, hostIP }) => (hostIP ? { hostPort, containerPort, protocol, hostIP } : { hostPort, containerPort, protocol }));
}

/** The JSON a plugin gets on stdin: its own entry plus the list's name/version and chained state. */
export function pluginStdin(
  list: NetworkConfList,
  plugin: PluginConf,
  opts: { prevResult?: unknown; portMappings: PortMappingSpec[]; podCidr?: string },
): PluginStdin {
  const conf: PluginStdin = { ...plugin, name: list.name, cniVersion: list.cniVersion };
  if (opts.prevResult !== undefined) conf.prevResult = opts.prevResult;
  // runtimeConfig carries only what the plugin declared a capability for (CNI conventions)
  const runtimeConfig: Record<string, unknown> = {};
  const portMappings = cniPortMappings(opts.portMappings);
  if (plugin.capabilities?.portMappings && portMappings.length > 0) runtimeConfig.portMappings = portMappings;
  if (plugin.capabilities?.ipRanges && opts.podCidr) {
    // one range set per CIDR (dual-stack "v4,v6" from UpdateRuntimeConfig)
    const subnets = opts.podCidr
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    runtimeConfig.ipRanges = subnets.map((subnet) => [{ subnet }]);
    if (isRecord(plugin.ipam)) conf.ipam = withoutStaticRanges(plugin.ipam, new Set(subnets.map(cidrFamily)));
  }
  if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
  return conf;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const cidrFamily = (cidr: string): 4 | 6 => (cidr.includes(':') ? 6 : 4);

/**
 * host-local prepends runtime ipRanges to its configured ranges (one address per
 * range set), so a pod CIDR inside the default range fails with "range set 0
 * overlaps with 1" and one outside it gives pods two addresses. The pod CIDR is
 * meant to replace the default: drop configured ranges of the families it covers.
 */
function withoutStaticRanges(ipam: Record<string, unknown>, families: Set<4 | 6>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...ipam };
  if (Array.isArray(ipam.ranges)) {
    out.ranges = ipam.ranges.filter((set: unknown) => {
      const first: unknown = Array.isArray(set) ? set[0] : undefined;
      return !(isRecord(first) && typeof first.subnet === 'string' && families.has(cidrFamily(first.subnet)));
    });
    if ((out.ranges as unknown[]).length === 0) delete out.ranges;
  }
  // the single-range form of older configs
  if (typeof ipam.subnet === 'string' && families.has(cidrFamily(ipam.subnet))) {
    for (const k of ['subnet', 'rangeStart', 'rangeEnd', 'gateway']) delete out[k];
  }
  return out;
}

/** The CNI_ARGS pairs the kubelet passes. */
export function podArgs(entry: Pick<CacheEntry, 'podNamespace' | 'podName' | 'sandboxId' | 'podUid'>): Record<string, string> {
  return {
    K8S_POD_NAMESPACE: entry.podNamespace,
    K8S_POD_NAME: entry.podName,
    K8S_POD_INFRA_CONTAINER_ID: entry.sandboxId,
    K8S_POD_UID: entry.podUid,
  };
}

/** The cache entry (and DEL input) for a pod on a given config. */
function entryFor(req: PodNetworkRequest, config: NetworkConfList): CacheEntry {
  return {
    sandboxId: req.sandboxId,
    podName: req.podName,
    podNamespace: req.podNamespace,
    podUid: req.podUid,
    netns: req.netnsPath,
    ifName: POD_IFNAME,
    portMappings: cniPortMappings(req.portMappings),
    config,
  };
}

const podRef = (e: { podNamespace: string; podName: string; sandboxId: string }): string =>
  e.podName ? `${e.podNamespace}/${e.podName}` : `sandbox ${shortId(e.sandboxId)}`;

export function createNetworkPlugin(opts: NetworkPluginOptions): NetworkPlugin {
  if (opts.plugin === 'none') return nonePlugin();
  const logger = opts.logger.child({ component: 'cni' });
  const timeoutMs = opts.execTimeoutMs ?? 60_000;
  let current: NetworkConfList | undefined;
  let problem = '';
  let podCidr = '';
  let cachePromise: Promise<ResultCache> | undefined;
  let closed = false;
  const seen = new Map<string, string>();

  let watcher: FSWatcher | undefined;
  let settleTimer: NodeJS.Timeout | undefined;
  const watchDir = (): void => {
    if (watcher || closed) return;
    try {
      watcher = watch(opts.confDir, { persistent: false }, () => {
        if (settleTimer) return;
        settleTimer = setTimeout(() => {
          settleTimer = undefined;
          probe();
        }, WATCH_SETTLE_MS);
        settleTimer.unref();
      });
      watcher.on('error', () => {
        // e.g. the directory was removed: drop it, the next periodic probe re-attaches
        watcher?.close();
        watcher = undefined;
      });
    } catch {
      /* the directory does not exist yet: the periodic probe finds it and watches it then */
    }
  };

  const probe = (): void => {
    if (closed) return;
    watchDir();
    const r = probeConfDirSync(opts.confDir, opts.binDirs, logger, seen);
    const before = { file: current?.file, problem };
    current = r.config;
    problem = r.problem ?? '';
    if (current && !problem && (current.file !== before.file || before.problem)) {
      logger.info('CNI network is ready', { network: current.name, file: current.file });
    } else if (problem && problem !== before.problem) {
      logger.warn('CNI network is not ready', { reason: problem });
    }
  };
  probe();
  const timer = setInterval(probe, opts.probeIntervalMs ?? 5000);
  timer.unref();

  const getCache = (): Promise<ResultCache> => {
    cachePromise ??= createResultCache(opts.cacheDir).catch((err: unknown) => {
      cachePromise = undefined; // e.g. a read-only mount fixed later: try again next call
      throw err;
    });
    return cachePromise;
  };

  /** One network operation per sandbox at a time: a StopPodSandbox during a slow RunPodSandbox waits for its ADD. */
  const locks = new Map<string, Promise<unknown>>();
  const serialized = <T>(id: string, fn: () => Promise<T>): Promise<T> => {
    const prev = locks.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    locks.set(id, tail);
    void tail.then(() => {
      if (locks.get(id) === tail) locks.delete(id);
    });
    return next;
  };

  const exec = async (cmd: CniCommand, entry: CacheEntry, conf: PluginStdin, ifName: string, signal: AbortSignal | undefined, log: Logger): Promise<unknown> => {
    const t0 = Date.now();
    try {
      const out = await execPlugin(conf, {
        command: cmd,
        containerId: entry.sandboxId,
        netns: entry.netns,
        ifName,
        args: podArgs(entry),
        binDirs: opts.binDirs,
        timeoutMs,
        signal,
      });
      log.debug('CNI plugin done', { plugin: conf.type, command: cmd, ifName, durationMs: Date.now() - t0 });
      return out;
    } catch (err) {
      log.debug('CNI plugin failed', { plugin: conf.type, command: cmd, ifName, durationMs: Date.now() - t0, error: (err as Error).message });
      throw err;
    }
  };

  const run = (cmd: CniCommand, entry: CacheEntry, plugin: PluginConf, prevResult: unknown, signal: AbortSignal | undefined, log: Logger): Promise<unknown> =>
    exec(cmd, entry, pluginStdin(entry.config, plugin, { prevResult, portMappings: entry.portMappings, podCidr }), entry.ifName, signal, log);

  /** `lo` inside the pod netns, brought up by the loopback plugin outside the configured chain, as the kubelet did. */
  const loopback = (cmd: CniCommand, entry: CacheEntry, signal: AbortSignal | undefined, log: Logger): Promise<unknown> =>
    exec(cmd, entry, { type: LOOPBACK_PLUGIN, name: 'cni-loopback', cniVersion: entry.config.cniVersion }, 'lo', signal, log);

  /** DEL through the chain in reverse; every plugin is tried (each may hold state), the first error is reported. */
  const del = async (entry: CacheEntry, signal: AbortSignal | undefined, log: Logger): Promise<void> => {
    // lo holds no state outside the netns and dies with it: best effort, and beside the chain
    // rather than after it (it touches no link the chain does), so StopPodSandbox does not wait
    // for one more plugin run
    const lo = entry.netns ? loopback('DEL', entry, undefined, log).catch(() => undefined) : undefined;
    let first: Error | undefined;
    for (const plugin of [...entry.config.plugins].reverse()) {
      try {
        await run('DEL', entry, plugin, entry.result, signal, log);
      } catch (err) {
        first ??= err as Error;
      }
    }
    await lo;
    if (first) throw first;
  };

  const setUp = async (req: PodNetworkRequest): Promise<PodNetworkResult> => {
    probe(); // a config changed a moment ago counts, even before the watcher fires
    const config = current;
    if (!config || problem) throw new Error(`set up network of pod ${podRef(req)}: network plugin is not ready: ${problem}`);
    const log = logger.child({ podSandboxId: req.sandboxId });
    const cache = await getCache();
    const entry = entryFor(req, config);
    // recorded before ADD: a crash mid-chain leaves an entry the janitor can DEL
    await cache.write(entry);
    try {
      await loopback('ADD', entry, req.signal, log);
      let prev: unknown;
      for (const plugin of config.plugins) {
        prev = (await run('ADD', entry, plugin, prev, req.signal, log)) ?? prev;
        // between plugins: an IP is allocated but the chain is not finished
        crashPoint('sandbox:mid-network');
      }
      entry.result = prev;
      await cache.write(entry);
    } catch (err) {
      // release what the chain already allocated (a host-local IP above all) before failing;
      // not under req.signal, which may be what just aborted
      log.warn('CNI ADD failed; undoing it with DEL', { network: config.name, error: (err as Error).message });
      try {
        await del(entry, undefined, log);
        await cache.remove(entry.sandboxId);
      } catch (e) {
        // the entry stays, so the network janitor retries the DEL
        log.error('CNI DEL after a failed ADD failed; the cache entry is kept for a retry', { error: (e as Error).message });
      }
      throw new Error(`set up network of pod ${podRef(req)} (network ${config.name}): ${(err as Error).message}`, {
        cause: err,
      });
    }
    const ips = resultIps(entry.result);
    log.info('pod network is set up', { network: config.name, ips });
    return { ips, networkName: config.name };
  };

  const tearDown = async (req: PodNetworkRequest): Promise<void> => {
    const log = logger.child({ podSandboxId: req.sandboxId });
    const cache = await getCache();
    let cached: CacheEntry | undefined;
    let corrupt = false;
    try {
      cached = await cache.read(req.sandboxId);
    } catch (err) {
      if (!(err instanceof CorruptCacheEntryError)) throw err;
      // plugins release by container id, so the current config still frees the IP
      log.warn('unreadable CNI cache entry; tearing down with the current config', { error: err.message });
      corrupt = true;
    }
    // never the cached netns path: a /proc/<pid> path may name another process by now
    const netns = req.netnsPath && existsSync(req.netnsPath) ? req.netnsPath : '';
    let entry: CacheEntry;
    if (cached) {
      entry = { ...cached, netns };
    } else if ((req.adopted || corrupt) && current) {
      entry = { ...entryFor(req, current), netns };
    } else {
      // nothing recorded: our ADD never started (the entry is written before it), so nothing to release
      if (req.adopted || corrupt) log.warn('no CNI config to tear the pod network down with', { reason: problem });
      return;
    }
    try {
      await del(entry, req.signal, log);
    } catch (err) {
      throw new Error(`tear down network of pod ${podRef(entry)} (network ${entry.config.name}): ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (!netns && needsIpMasqCleanup(entry.config)) {
      // bridge skips its ipMasq teardown without a netns (see ipmasq.ts); the IP is already free, so a failure here only warns
      try {
        const chains = await cleanupIpMasq(entry.config.name, entry.sandboxId);
        if (chains.length) log.info('removed ipMasq rules the bridge plugin left behind', { chains });
      } catch (err) {
        log.warn('could not remove leftover ipMasq rules', { error: (err as Error).message });
      }
    }
    await cache.remove(req.sandboxId);
    log.info('pod network is torn down', { network: entry.config.name });
  };

  return {
    name: 'cni',
    status(): NetworkStatus {
      if (current && !problem) return { ready: true, reason: '', message: '', configName: current.name, configFile: current.file };
      return { ready: false, reason: NOT_READY, message: `network plugin is not ready: ${problem || 'cni config uninitialized'}` };
    },
    setUpPod: (req) => serialized(req.sandboxId, () => setUp(req)),
    tearDownPod: (req) => serialized(req.sandboxId, () => tearDown(req)),

    async podNetwork(sandboxId: string): Promise<PodNetworkResult | undefined> {
      // an entry without a result (ADD interrupted) still counts: there is state to tear down
      let entry: CacheEntry | undefined;
      try {
        entry = await (await getCache()).read(sandboxId);
      } catch (err) {
        // unreadable, but state may exist: callers must still tear it down
        if (err instanceof CorruptCacheEntryError) return { ips: [], networkName: current?.name ?? '' };
        throw err;
      }
      if (!entry) return undefined;
      return { ips: resultIps(entry.result), networkName: entry.config.name };
    },

    async cachedSandboxes() {
      return (await getCache()).list();
    },

    setPodCidr(cidr: string) {
      if (cidr !== podCidr) logger.info('pod CIDR set', { podCidr: cidr });
      podCidr = cidr;
    },

    close() {
      closed = true;
      clearInterval(timer);
      if (settleTimer) clearTimeout(settleTimer);
      watcher?.close();
      watcher = undefined;
    },
  };
}
