import { existsSync } from 'fs';
import type { Logger } from '../logging/logger';
import { probeConfDirSync } from './cni-config';
import { execPlugin, resultIps } from './cni-exec';
import { pluginLauncher } from './cni-launch';
import { CniConfigWatcher, fsWatchDir } from './config-watcher';
import { cleanupIpMasq, needsIpMasqCleanup } from './ipmasq';
import { nonePlugin } from './none-plugin';
import { PluginChain } from './plugin-chain';
import { PodAttach } from './pod-attach';
import { PodDetach } from './pod-detach';
import { CorruptCacheEntryError, createResultCache, lazyResultCache, type CacheEntry } from './result-cache';
import { KeyedQueue } from './sandbox-queue';
import type { NetworkPlugin, NetworkStatus, PodNetworkResult } from './types';

export interface NetworkPluginOptions {
  plugin: 'cni' | 'none';
  confDir: string;
  binDirs: string[];
  cacheDir: string;
  /** Scratch space of the shell that starts plugins; without it, crishim spawns them itself. */
  execDir?: string;
  logger: Logger;
  /** Per plugin invocation; the plugin is killed after it. Default 60 s. */
  execTimeoutMs?: number;
  /** Fallback re-probe period (fs.watch does most of the work). Default 5 s. */
  probeIntervalMs?: number;
  /** Called between the plugins of an ADD chain: the recovery tests crash the daemon there. */
  midNetworkHook?: () => void;
}

const NOT_READY = 'NetworkPluginNotReady';
/** Editors and `cp` write in several steps: probe once the burst of watch events is over. */
const WATCH_SETTLE_MS = 100;

/** The network plugin: `none`, or CNI composed of its units (config watch, plugin chain, attach, detach, cache). */
export function createNetworkPlugin(opts: NetworkPluginOptions): NetworkPlugin {
  if (opts.plugin === 'none') return nonePlugin();
  const logger = opts.logger.child({ component: 'cni' });
  const seen = new Map<string, string>(); // invalid files already logged, by content
  const configs = new CniConfigWatcher({
    probe: () => probeConfDirSync(opts.confDir, opts.binDirs, logger, seen),
    watchDir: fsWatchDir(opts.confDir),
    logger,
    intervalMs: opts.probeIntervalMs ?? 5000,
    settleMs: WATCH_SETTLE_MS,
  });
  let podCidr = '';
  const cache = lazyResultCache(() => createResultCache(opts.cacheDir));
  const launch = pluginLauncher(opts.execDir);
  logger.info(`CNI plugins: ${launch.why}`);
  const chain = new PluginChain({
    exec: (conf, inv) => execPlugin(conf, inv, launch.launcher),
    binDirs: opts.binDirs,
    timeoutMs: opts.execTimeoutMs ?? 60_000,
    podCidr: () => podCidr,
    betweenAddPlugins: opts.midNetworkHook,
  });
  const attach = new PodAttach({ configs, cache, chain, logger });
  const detach = new PodDetach({
    configs,
    cache,
    chain,
    ipMasq: { needed: needsIpMasqCleanup, cleanup: (network, id) => cleanupIpMasq(network, id) },
    netnsExists: existsSync,
    logger,
  });
  const queue = new KeyedQueue();

  return {
    name: 'cni',
    status(): NetworkStatus {
      const current = configs.current;
      if (current && !configs.problem)
        return { ready: true, reason: '', message: '', configName: current.name, configFile: current.file };
      return {
        ready: false,
        reason: NOT_READY,
        message: `network plugin is not ready: ${configs.problem || 'cni config uninitialized'}`,
      };
    },
    setUpPod: (req) => queue.run(req.sandboxId, () => attach.attach(req)),
    tearDownPod: (req) => queue.run(req.sandboxId, () => detach.detach(req)),

    async podNetwork(sandboxId: string): Promise<PodNetworkResult | undefined> {
      // an entry without a result (ADD interrupted) still counts: there is state to tear down
      let entry: CacheEntry | undefined;
      try {
        entry = await (await cache()).read(sandboxId);
      } catch (err) {
        // unreadable, but state may exist: callers must still tear it down
        if (err instanceof CorruptCacheEntryError) return { ips: [], networkName: configs.current?.name ?? '' };
        throw err;
      }
      if (!entry) return undefined;
      return { ips: resultIps(entry.result), networkName: entry.config.name };
    },

    async cachedSandboxes() {
      return (await cache()).list();
    },

    setPodCidr(cidr: string) {
      if (cidr !== podCidr) logger.info('pod CIDR set', { podCidr: cidr });
      podCidr = cidr;
    },

    close() {
      configs.close();
      launch.launcher.close();
    },
  };
}
