import { promises as fsp } from 'fs';
import * as path from 'path';
import type { Logger } from '../logging/logger';
import type { ImageRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';
import { nowNanos } from '../time';

const DEFAULT_ROOT = '/var/lib/docker';
/** The kubelet asks every few seconds; layer sizes change only on pull/remove. */
const CACHE_MS = 10_000;

/**
 * Bytes of all image layers, each counted once, from Docker's layer store metadata
 * (`<root>/image/<driver>/layerdb/sha256/<chain>/size`, written by dockerd when a layer is
 * committed): the same number as `docker system df`'s LayersSize, for a readdir and one
 * small read per layer instead of a daemon-wide df (which on API < 1.42 also walks every
 * container's writable layer). Undefined when the store is not readable here (remote
 * daemon, containerd image store).
 *
 * `known` keeps each layer's size between calls: a chain id names its content, and Docker moves
 * a layer's directory into place complete, so a size read once never changes. A node with
 * hundreds of layers then pays one readdir per call, not hundreds of reads.
 */
export async function layerStoreBytes(root: string, known = new Map<string, number>()): Promise<number | undefined> {
  const imageDir = path.join(root, 'image');
  let drivers: string[];
  try {
    drivers = await fsp.readdir(imageDir);
  } catch {
    return undefined;
  }
  let total = 0;
  let found = false;
  const seen = new Set<string>();
  for (const driver of drivers) {
    const layers = path.join(imageDir, driver, 'layerdb', 'sha256');
    const chains = await fsp.readdir(layers).catch(() => undefined);
    if (!chains) continue;
    found = true;
    const sizes = await Promise.all(
      chains.map(async (c) => {
        const file = path.join(layers, c, 'size');
        seen.add(file);
        const kept = known.get(file);
        if (kept !== undefined) return kept;
        // empty when the layer is being removed right now: counted as 0 and read again next time
        const text = (await fsp.readFile(file, 'utf8').catch(() => '')).trim();
        if (!/^\d+$/.test(text)) return 0;
        const size = Number(text);
        known.set(file, size);
        return size;
      }),
    );
    total += sizes.reduce((a, b) => a + b, 0);
  }
  for (const file of known.keys()) if (!seen.has(file)) known.delete(file);
  return found ? total : undefined;
}

async function dfLayersBytes(deps: ServiceDeps): Promise<number> {
  return (await deps.docker.imageLayersSize()) ?? 0;
}

/**
 * ImageFsInfo: one FilesystemUsage for Docker's data root. used_bytes = image layers (above);
 * inodes_used = used inodes of the filesystem holding the data root (Docker keeps no per-layer
 * inode count and walking every layer is what we avoid), an over- rather than under-estimate.
 * container_filesystems repeats the entry: writable layers live on the same data root, and an
 * identical mountpoint is how the kubelet learns the image filesystem is not split (as CRI-O).
 */
export function imageFsInfoRpc(deps: ServiceDeps, logger: Logger = deps.logger) {
  let cached:
    { at: number; value: Promise<{ mountpoint: string; bytes: number; inodes: number; source: string }> } | undefined;
  const layerSizes = new Map<string, number>();

  const measure = async (): Promise<{ mountpoint: string; bytes: number; inodes: number; source: string }> => {
    let engine = deps.engine.current();
    if (!engine.dockerRootDir) engine = await deps.engine.refresh();
    const mountpoint = engine.dockerRootDir ?? DEFAULT_ROOT;
    const [local, st] = await Promise.all([
      layerStoreBytes(mountpoint, layerSizes),
      fsp.statfs(mountpoint).catch(() => undefined),
    ]);
    const bytes = local ?? (await dfLayersBytes(deps));
    const source = local === undefined ? 'docker df' : 'layer store';
    if (cached === undefined) logger.info('image filesystem usage measured', { mountpoint, source, usedBytes: bytes });
    return { mountpoint, bytes, inodes: st ? st.files - st.ffree : 0, source };
  };

  return async (): Promise<ImageRes<'ImageFsInfo'>> => {
    if (!cached || Date.now() - cached.at > CACHE_MS) {
      const value = measure();
      cached = { at: Date.now(), value };
      value.catch(() => (cached = undefined));
    }
    const u = await cached.value;
    const usage = () => ({
      timestamp: nowNanos(),
      fs_id: { mountpoint: u.mountpoint },
      used_bytes: { value: String(u.bytes) },
      inodes_used: { value: String(u.inodes) },
    });
    return { image_filesystems: [usage()], container_filesystems: [usage()] };
  };
}
