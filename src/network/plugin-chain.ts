import type { Logger } from '../logging/logger';
import { LOOPBACK_PLUGIN, type PluginConf } from './cni-config';
import type { CniCommand, CniInvocation, PluginStdin } from './cni-exec';
import { podArgs, pluginStdin } from './plugin-stdin';
import type { CacheEntry } from './result-cache';

/** Runs one plugin binary (cni-exec's `execPlugin`, or a fake in tests). */
export type ExecPlugin = (conf: PluginStdin, inv: CniInvocation) => Promise<unknown>;

export interface PluginChainDeps {
  exec: ExecPlugin;
  binDirs: string[];
  /** Per plugin invocation; the plugin is killed after it. */
  timeoutMs: number;
  /** The pod CIDR from UpdateRuntimeConfig ('' when none), read at each call. */
  podCidr: () => string;
  /** Called after each plugin of an ADD chain: the recovery tests crash the daemon there. */
  betweenAddPlugins?: () => void;
}

/**
 * A configured plugin list run the CNI way: ADD in order with each result
 * chained as the next prevResult, DEL in reverse; `lo` is brought up by the
 * loopback plugin outside the list, as the kubelet did.
 */
export class PluginChain {
  constructor(private readonly deps: PluginChainDeps) {}

  /** ADD of `lo`, then of the list; the last plugin's result (the pod's IPs). Stops at the first error. */
  async add(entry: CacheEntry, signal: AbortSignal | undefined, log: Logger): Promise<unknown> {
    await this.loopback('ADD', entry, signal, log);
    let prev: unknown;
    for (const plugin of entry.config.plugins) {
      prev = (await this.run('ADD', entry, plugin, prev, signal, log)) ?? prev;
      // between plugins an IP is allocated but the chain is not finished
      this.deps.betweenAddPlugins?.();
    }
    return prev;
  }

  /** DEL through the list in reverse; every plugin is tried (each may hold state), the first error is thrown. */
  async del(entry: CacheEntry, signal: AbortSignal | undefined, log: Logger): Promise<void> {
    // lo holds no state outside the netns and dies with it: best effort, and beside the chain
    // rather than after it (it touches no link the chain does), so StopPodSandbox does not wait
    // for one more plugin run
    const lo = entry.netns ? this.loopback('DEL', entry, undefined, log).catch(() => undefined) : undefined;
    let first: Error | undefined;
    for (const plugin of [...entry.config.plugins].reverse()) {
      try {
        await this.run('DEL', entry, plugin, entry.result, signal, log);
      } catch (err) {
        first ??= err as Error;
      }
    }
    await lo;
    if (first) throw first;
  }

  private run(
    cmd: CniCommand,
    entry: CacheEntry,
    plugin: PluginConf,
    prevResult: unknown,
    signal: AbortSignal | undefined,
    log: Logger,
  ): Promise<unknown> {
    const conf = pluginStdin(entry.config, plugin, {
      prevResult,
      portMappings: entry.portMappings,
      podCidr: this.deps.podCidr(),
    });
    return this.exec(cmd, entry, conf, entry.ifName, signal, log);
  }

  private loopback(cmd: CniCommand, entry: CacheEntry, signal: AbortSignal | undefined, log: Logger): Promise<unknown> {
    return this.exec(
      cmd,
      entry,
      { type: LOOPBACK_PLUGIN, name: 'cni-loopback', cniVersion: entry.config.cniVersion },
      'lo',
      signal,
      log,
    );
  }

  private async exec(
    cmd: CniCommand,
    entry: CacheEntry,
    conf: PluginStdin,
    ifName: string,
    signal: AbortSignal | undefined,
    log: Logger,
  ): Promise<unknown> {
    const t0 = Date.now();
    try {
      const out = await this.deps.exec(conf, {
        command: cmd,
        containerId: entry.sandboxId,
        netns: entry.netns,
        ifName,
        args: podArgs(entry),
        binDirs: this.deps.binDirs,
        timeoutMs: this.deps.timeoutMs,
        signal,
      });
      log.debug('CNI plugin done', { plugin: conf.type, command: cmd, ifName, durationMs: Date.now() - t0 });
      return out;
    } catch (err) {
      log.debug('CNI plugin failed', {
        plugin: conf.type,
        command: cmd,
        ifName,
        durationMs: Date.now() - t0,
        error: (err as Error).message,
      });
      throw err;
    }
  }
}
