import { shortId } from '../logging/logger';
import type { NetworkConfList } from './cni-config';
import { cniPortMappings } from './plugin-stdin';
import type { CacheEntry } from './result-cache';
import type { PodNetworkRequest } from './types';

export const POD_IFNAME = 'eth0';

/** The cache entry (and DEL input) for a pod on a given config. */
export function entryFor(req: PodNetworkRequest, config: NetworkConfList): CacheEntry {
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

/** How errors name a pod: namespace/name, or the sandbox when the janitor knows no more. */
export const podRef = (e: { podNamespace: string; podName: string; sandboxId: string }): string =>
  e.podName ? `${e.podNamespace}/${e.podName}` : `sandbox ${shortId(e.sandboxId)}`;
