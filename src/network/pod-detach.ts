import type { Logger } from '../logging/logger';
import type { NetworkConfList } from './cni-config';
import type { PluginChain } from './plugin-chain';
import type { ConfigSource } from './pod-attach';
import { entryFor, podRef } from './pod-entry';
import { CorruptCacheEntryError, type CacheEntry, type ResultCache } from './result-cache';
import type { PodNetworkRequest } from './types';

/** The bridge plugin's ipMasq rules, which its own DEL leaves behind without a netns (see ipmasq.ts). */
export interface IpMasqJanitor {
  needed(config: NetworkConfList): boolean;
  /** Removes the rules of one sandbox; the chains it removed. */
  cleanup(network: string, sandboxId: string): Promise<string[]>;
}

export interface PodDetachDeps {
  configs: Pick<ConfigSource, 'current' | 'problem'>;
  cache: () => Promise<ResultCache>;
  chain: Pick<PluginChain, 'del'>;
  ipMasq: IpMasqJanitor;
  /** Whether a netns path still exists (fs.existsSync in production). */
  netnsExists: (path: string) => boolean;
  logger: Logger;
}

/**
 * CNI DEL of one pod from its cache entry (the config ADD ran with, even if
 * the conf dir changed since), with or without its netns; idempotent. The
 * entry goes only once DEL succeeded, so a failure is retried later.
 */
export class PodDetach {
  constructor(private readonly deps: PodDetachDeps) {}

  async detach(req: PodNetworkRequest): Promise<void> {
    const log = this.deps.logger.child({ podSandboxId: req.sandboxId });
    const cache = await this.deps.cache();
    const entry = await this.entryToDelete(req, cache, log);
    if (!entry) return;
    try {
      await this.deps.chain.del(entry, req.signal, log);
    } catch (err) {
      throw new Error(
        `tear down network of pod ${podRef(entry)} (network ${entry.config.name}): ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (!entry.netns && this.deps.ipMasq.needed(entry.config)) {
      // the IP is already free, so a failure here only warns
      try {
        const chains = await this.deps.ipMasq.cleanup(entry.config.name, entry.sandboxId);
        if (chains.length) log.info('removed ipMasq rules the bridge plugin left behind', { chains });
      } catch (err) {
        log.warn('could not remove leftover ipMasq rules', { error: (err as Error).message });
      }
    }
    await cache.remove(req.sandboxId);
    log.info('pod network is torn down', { network: entry.config.name });
  }

  /** What DEL runs with; undefined when there is nothing to release. */
  private async entryToDelete(
    req: PodNetworkRequest,
    cache: ResultCache,
    log: Logger,
  ): Promise<CacheEntry | undefined> {
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
    const netns = req.netnsPath && this.deps.netnsExists(req.netnsPath) ? req.netnsPath : '';
    if (cached) return { ...cached, netns };
    const current = this.deps.configs.current;
    if ((req.adopted || corrupt) && current) return { ...entryFor(req, current), netns };
    // nothing recorded: our ADD never started (the entry is written before it), so nothing to release
    if (req.adopted || corrupt)
      log.warn('no CNI config to tear the pod network down with', { reason: this.deps.configs.problem });
    return undefined;
  }
}
