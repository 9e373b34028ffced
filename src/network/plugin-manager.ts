import { watch, type FSWatcher } from 'fs';
import { crashPoint } from '../crash-points';
import type { Logger } from '../logging/logger';
import { shortId } from '../logging/logger';
import { probeConfDir, type NetworkConfList, type PluginConf } from './cni-config';
import { CniPluginError, execPlugin, resultIps, type CniCommand } from './cni-exec';
import { createResultCache, type CacheEntry, type ResultCache } from './result-cache';
import type { NetworkPlugin, NetworkStatus, PodNetworkRequest, PodNetworkResult } from './types';

export interface NetworkPluginOptions {
  plugin: 'cni' | 'none';
  confDir: string;
  binDirs: string[];
  cacheDir: string;
  logger: Logger;
  execTimeoutMs?: number;
  /** Fallback re-probe period; fs.watch does most of the work. */
  probeIntervalMs?: number;
}

const IFNAME = 'eth0';
const NOT_READY = 'NetworkPluginNotReady';

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

/** The JSON a plugin gets on stdin: its own entry plus the list's name/version and chained state. */
export function pluginStdin(
  list: NetworkConfList,
  plugin: PluginConf,
  opts: { prevResult?: unknown; portMappings: CacheEntry['portMappings']; podCidr?: string },
): PluginConf & { name: string; cniVersion: string } {
  const conf: PluginConf & { name: string; cniVersion: string } = { ...plugin, name: list.name, cniVersion: list.cniVersion };
  if (opts.prevResult !== undefined) conf.prevResult = opts.prevResult;
  const runtimeConfig: Record<string, unknown> = {};
  if (plugin.capabilities?.portMappings && opts.portMappings.length > 0) runtimeConfig.portMappings = opts.portMappings;
  if (plugin.capabilities?.ipRanges && opts.podCidr) {
    runtimeConfig.ipRanges = [opts.podCidr.split(',').map((subnet) => ({ subnet }))];
  }
  if (Object.keys(runtimeConfig).length > 0) conf.runtimeConfig = runtimeConfig;
  return conf;
}

/** The cache entry (and DEL input) for a pod on a given config. */
function entryFor(req: PodNetworkRequest, config: NetworkConfList): CacheEntry {
  return {
    sandboxId: req.sandboxId,
    podName: req.podName,
    podNamespace: req.podNamespace,
    podUid: req.podUid,
    netns: req.netnsPath,
    ifName: IFNAME,
    portMappings: req.portMappings,
    config,
  };
}

export function createNetworkPlugin(opts: NetworkPluginOptions): NetworkPlugin {
  if (opts.plugin === 'none') return nonePlugin();
  const logger = opts.logger.child({ component: 'cni' });
  const timeoutMs = opts.execTimeoutMs ?? 60_000;
  let current: NetworkConfList | undefined;
  let problem = 'CNI configuration not probed yet';
  let podCidr = '';
  let cache: ResultCache | undefined;
  const seen = new Map<string, string>();

  const probe = async (): Promise<void> => {
    const r = await probeConfDir(opts.confDir, opts.binDirs, logger, seen);
    const before = current?.file;
    current = r.config;
    problem = r.problem ?? '';
    if (current && current.file !== before) logger.info('using CNI config', { network: current.name, file: current.file });
    if (!current && before) logger.warn('no usable CNI config any more', { reason: problem });
  };
  let probing: Promise<void> | undefined;
  const reprobe = (): Promise<void> => (probing ??= probe().finally(() => (probing = undefined)));
  void reprobe();

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(opts.confDir, () => void reprobe());
    watcher.on('error', () => undefined);
  } catch {
    /* directory missing: the timer finds it once it appears */
  }
  const timer = setInterval(() => void reprobe(), opts.probeIntervalMs ?? 2000);
  timer.unref();

  const getCache = async (): Promise<ResultCache> => (cache ??= await createResultCache(opts.cacheDir));

  const run = (cmd: CniCommand, entry: CacheEntry, plugin: PluginConf, prevResult: unknown, signal: AbortSignal | undefined, ifName = entry.ifName) =>
    execPlugin(pluginStdin(entry.config, plugin, { prevResult, portMappings: entry.portMappings, podCidr }), {
      command: cmd,
      containerId: entry.sandboxId,
      netns: entry.netns,
      ifName,
      args: {
        K8S_POD_NAMESPACE: entry.podNamespace,
        K8S_POD_NAME: entry.podName,
        K8S_POD_INFRA_CONTAINER_ID: entry.sandboxId,
        K8S_POD_UID: entry.podUid,
      },
      binDirs: opts.binDirs,
      timeoutMs,
      signal,
    });

  /** `lo` inside the pod netns, brought up by the loopback plugin outside the configured chain, as the kubelet did. */
  const loopback = (cmd: CniCommand, entry: CacheEntry, signal?: AbortSignal): Promise<unknown> =>
    execPlugin(
      { type: 'loopback', name: 'cni-loopback', cniVersion: entry.config.cniVersion },
      { command: cmd, containerId: entry.sandboxId, netns: entry.netns, ifName: 'lo', args: {}, binDirs: opts.binDirs, timeoutMs, signal },
    );

  /** DEL through the chain in reverse; every plugin is tried, the first error is reported. */
  const del = async (entry: CacheEntry, signal?: AbortSignal): Promise<void> => {
    let first: Error | undefined;
    for (const plugin of [...entry.config.plugins].reverse()) {
      try {
        await run('DEL', entry, plugin, entry.result, signal);
      } catch (err) {
        first ??= err as Error;
      }
    }
    // lo disappears with the netns; DEL is a courtesy
    await loopback('DEL', entry).catch(() => undefined);
    if (first) throw first;
  };

  return {
    name: 'cni',
    status(): NetworkStatus {
      if (current && !problem) return { ready: true, reason: '', message: '', configName: current.name, configFile: current.file };
      return { ready: false, reason: NOT_READY, message: `network plugin is not ready: ${problem}` };
    },

    async setUpPod(req: PodNetworkRequest): Promise<PodNetworkResult> {
      await reprobe();
      const config = current;
      if (!config || problem) throw new Error(`set up network of pod ${req.podNamespace}/${req.podName}: network plugin is not ready: ${problem}`);
      const log = logger.child({ podSandboxId: shortId(req.sandboxId) });
      const c = await getCache();
      const entry = entryFor(req, config);
      await c.write(entry);
      try {
        await loopback('ADD', entry, req.signal);
        let prev: unknown;
        for (const plugin of config.plugins) {
          prev = await run('ADD', entry, plugin, prev, req.signal);
          // between plugins: an IP is allocated but the chain is not finished
          crashPoint('sandbox:mid-network');
        }
        entry.result = prev;
        await c.write(entry);
      } catch (err) {
        // release whatever the chain already allocated (an IP above all) before failing
        log.warn('CNI ADD failed; undoing it', { error: (err as Error).message });
        await del(entry).catch((e: unknown) => log.error('CNI DEL after failed ADD failed', { error: (e as Error).message }));
        await c.remove(entry.sandboxId);
        const msg = err instanceof CniPluginError ? err.message : `CNI ADD failed: ${(err as Error).message}`;
        throw new Error(`set up network of pod ${req.podNamespace}/${req.podName} (network ${config.name}): ${msg}`);
      }
      const ips = resultIps(entry.result);
      log.info('pod network is set up', { network: config.name, ips });
      return { ips, networkName: config.name };
    },

    async tearDownPod(req: PodNetworkRequest): Promise<void> {
      const c = await getCache();
      const cached = await c.read(req.sandboxId);
      let entry: CacheEntry;
      if (cached) {
        // a netns that is gone is fine: plugins release IPs and rules by container id
        entry = { ...cached, netns: req.netnsPath };
      } else if (req.adopted && current) {
        entry = entryFor(req, current);
      } else {
        // nothing recorded: our ADD never started, so there is nothing to release
        return;
      }
      await del(entry, req.signal);
      await c.remove(req.sandboxId);
      logger.info('pod network torn down', { podSandboxId: shortId(req.sandboxId), network: entry.config.name });
    },

    async podNetwork(sandboxId: string): Promise<PodNetworkResult | undefined> {
      const entry = await (await getCache()).read(sandboxId);
      if (!entry) return undefined;
      return { ips: resultIps(entry.result), networkName: entry.config.name };
    },

    async cachedSandboxes() {
      return (await getCache()).list();
    },

    setPodCidr(cidr: string) {
      podCidr = cidr;
    },

    close() {
      clearInterval(timer);
      watcher?.close();
    },
  };
}
