import type { Logger } from '../logging/logger';
import { shortId } from '../logging/logger';
import type { NetworkPlugin } from './types';

/** What releasing orphaned pod networks needs of the plugin. */
export type OrphanNetworks = Pick<NetworkPlugin, 'cachedSandboxes' | 'tearDownPod' | 'podNetwork'>;

/**
 * Back-off and a retry budget for orphaned CNI teardowns, per sandbox id. A DEL that can
 * never succeed (e.g. a plugin config it refuses) must not run every round forever: after
 * each failure a sandbox sits out twice as many rounds as before, and after `maxAttempts`
 * failures it is given up on (one warning says what stays behind).
 */
export class TeardownRetries {
  private readonly state = new Map<string, { failures: number; skip: number }>();
  constructor(
    readonly maxAttempts = 8,
    readonly maxSkip = 60,
  ) {}

  /** Whether this round should try `id` (counts the rounds it sits out). */
  due(id: string): boolean {
    const s = this.state.get(id);
    if (!s) return true;
    if (s.failures >= this.maxAttempts) return false;
    if (s.skip > 0) {
      s.skip -= 1;
      return false;
    }
    return true;
  }

  /** Records a failure; true when that was the last attempt. */
  failed(id: string): boolean {
    const s = this.state.get(id) ?? { failures: 0, skip: 0 };
    s.failures += 1;
    s.skip = Math.min(2 ** (s.failures - 1) - 1, this.maxSkip);
    this.state.set(id, s);
    return s.failures >= this.maxAttempts;
  }

  succeeded(id: string): void {
    this.state.delete(id);
  }
}

/**
 * CNI DEL of a sandbox known by its id alone (its pod and netns gone or never recorded): the
 * plugins learn what to release from the result cached when the network was set up.
 */
export function releaseCachedNetwork(network: Pick<NetworkPlugin, 'tearDownPod'>, sandboxId: string): Promise<void> {
  return network.tearDownPod({
    podName: '',
    podNamespace: '',
    podUid: '',
    sandboxId,
    netnsPath: '',
    portMappings: [],
  });
}

/** CNI DEL for cached networks whose sandbox is gone; failures stay cached for a later round (see TeardownRetries). */
export async function releaseOrphanNetworks(
  deps: { network: OrphanNetworks },
  log: Logger,
  known: (id: string) => boolean,
  retries?: TeardownRetries,
): Promise<void> {
  for (const id of await deps.network.cachedSandboxes()) {
    if (known(id)) continue;
    if (retries && !retries.due(id)) continue;
    try {
      await releaseCachedNetwork(deps.network, id);
      retries?.succeeded(id);
      log.info('released the network of a sandbox that no longer exists', { podSandboxId: shortId(id) });
    } catch (err) {
      const error = (err as Error).message;
      if (!retries?.failed(id)) {
        log.warn('CNI DEL of an orphaned sandbox failed; will retry', { podSandboxId: shortId(id), error });
        continue;
      }
      const net = await deps.network.podNetwork(id).catch(() => undefined);
      log.warn(
        'giving up on CNI DEL of an orphaned sandbox; its network setup stays behind (IP reservation, host port and masquerade rules) until removed by hand',
        {
          podSandboxId: id,
          attempts: retries.maxAttempts,
          ips: net?.ips ?? [],
          network: net?.networkName ?? '',
          error,
        },
      );
    }
  }
}
