import type { Logger } from '../logging/logger';
import type { NetworkConfList } from './cni-config';
import { resultIps } from './cni-exec';
import type { PluginChain } from './plugin-chain';
import { entryFor, podRef } from './pod-entry';
import type { ResultCache } from './result-cache';
import type { PodNetworkRequest, PodNetworkResult } from './types';

/** The CNI config in use (a CniConfigWatcher, or a fake in tests). */
export interface ConfigSource {
  readonly current: NetworkConfList | undefined;
  readonly problem: string;
  refresh(): void;
}

export interface PodAttachDeps {
  configs: ConfigSource;
  /** The result cache, opened on first use. */
  cache: () => Promise<ResultCache>;
  chain: Pick<PluginChain, 'add' | 'del'>;
  /** The plugin manager's logger; lines about a pod add its sandbox id. */
  logger: Logger;
}

/**
 * CNI ADD of one pod: the cache entry is written before the chain runs (a
 * crash mid-chain leaves what DEL needs), completed with the result after it;
 * a failed chain is undone with DEL before the error goes up.
 */
export class PodAttach {
  constructor(private readonly deps: PodAttachDeps) {}

  async attach(req: PodNetworkRequest): Promise<PodNetworkResult> {
    const { configs, chain } = this.deps;
    configs.refresh();
    const config = configs.current;
    if (!config || configs.problem)
      throw new Error(`set up network of pod ${podRef(req)}: network plugin is not ready: ${configs.problem}`);
    const log = this.deps.logger.child({ podSandboxId: req.sandboxId });
    const cache = await this.deps.cache();
    const entry = entryFor(req, config);
    await cache.write(entry);
    try {
      entry.result = await chain.add(entry, req.signal, log);
      await cache.write(entry);
    } catch (err) {
      // release what the chain already allocated (a host-local IP above all) before failing;
      // not under req.signal, which may be what just aborted
      log.warn('CNI ADD failed; undoing it with DEL', { network: config.name, error: (err as Error).message });
      try {
        await chain.del(entry, undefined, log);
        await cache.remove(entry.sandboxId);
      } catch (e) {
        // the entry stays, so the network janitor retries the DEL
        log.error('CNI DEL after a failed ADD failed; the cache entry is kept for a retry', {
          error: (e as Error).message,
        });
      }
      throw new Error(`set up network of pod ${podRef(req)} (network ${config.name}): ${(err as Error).message}`, {
        cause: err,
      });
    }
    const ips = resultIps(entry.result);
    log.info('pod network is set up', { network: config.name, ips });
    return { ips, networkName: config.name };
  }
}
