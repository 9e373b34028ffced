import type { DockerEngine } from '../docker/engine';
import { isImageIdLike } from '../docker/images';
import { isNotFound } from '../errors';

/** The names Docker holds for one image id: its tags and repo digests, `<none>` placeholders left out. */
export interface ImageNaming {
  tags: string[];
  digests: string[];
}

/** Image names by id, for ContainerStatus: the kubelet asks it per container at every pod sync. */
export interface ImageNames {
  of(imageId: string): Promise<ImageNaming | undefined>;
}

/**
 * How long an image's names are taken as current. A retag or a pull of a digest shows within it;
 * an image id never changes what it names, so only the names can go stale.
 */
export const IMAGE_NAMES_TTL_MS = 30_000;

/**
 * One inspect per image id per TTL, concurrent asks sharing it. An image Docker no longer has
 * (removed while a container of it still exists) has no names; any other failure is not cached.
 */
export function createImageNames(
  docker: Pick<DockerEngine, 'inspectImage'>,
  ttlMs = IMAGE_NAMES_TTL_MS,
  now: () => number = () => performance.now(),
): ImageNames {
  const cache = new Map<string, { at: number; naming: Promise<ImageNaming | undefined> }>();
  const lookUp = async (id: string): Promise<ImageNaming | undefined> => {
    try {
      const img = await docker.inspectImage(id);
      return {
        tags: (img.RepoTags ?? []).filter((t) => t !== '<none>:<none>'),
        digests: (img.RepoDigests ?? []).filter((d) => !d.startsWith('<none>')),
      };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      cache.delete(id);
      throw err;
    }
  };
  return {
    of(imageId) {
      if (!imageId) return Promise.resolve(undefined);
      const hit = cache.get(imageId);
      if (hit && now() - hit.at < ttlMs) return hit.naming;
      // expired entries go as they are met; the map holds one entry per image containers use
      for (const [id, e] of cache) if (now() - e.at >= ttlMs) cache.delete(id);
      const naming = lookUp(imageId);
      cache.set(imageId, { at: now(), naming });
      return naming;
    },
  };
}

/**
 * The image a container status names, as users look for it (pod status `image`, `imageID`):
 * the image the user asked for when the kubelet says so (`user_specified_image`), else the name
 * the container was created from, else (created from an id, as kubelets before 1.31 do) the
 * image's first tag; the reference is its first repo digest, else its id.
 */
export function statusImage(
  created: { configImage: string; imageId: string; userImage?: string },
  naming: ImageNaming | undefined,
): { image: string; imageRef: string } {
  const named = created.configImage && !isImageIdLike(created.configImage) ? created.configImage : undefined;
  return {
    image: created.userImage || named || naming?.tags[0] || created.configImage || created.imageId,
    imageRef: naming?.digests[0] ?? created.imageId,
  };
}
