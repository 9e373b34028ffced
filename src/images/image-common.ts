import type * as Docker from '../docker/types';
import { familiarRef, isImageRef, parseRef } from '../docker/images';
import { invalidArgument, isNotFound } from '../errors';
import type { ImageRes } from '../server/rpc';
import type { ServiceDeps } from '../service-deps';

/** Shared by the image RPC modules: conversion Docker -> CRI Image, lookups, validation. */

export type CriImage = NonNullable<ImageRes<'ImageStatus'>['image']>;

/** The fields of Docker's inspect and list answers we use (list has no Config: no USER). */
export interface DockerImageLike {
  Id: string;
  RepoTags?: string[] | null;
  RepoDigests?: string[] | null;
  Size: number;
  Config?: { User?: string } | null;
}

/** uid or username from an image's USER (`1000`, `1000:1000`, `nobody`, `nobody:grp`). */
export function imageUser(user: string | undefined): { uid: { value: string } | null; username: string } {
  const name = (user ?? '').split(':')[0];
  if (!name) return { uid: null, username: '' };
  return /^\d+$/.test(name) ? { uid: { value: name }, username: '' } : { uid: null, username: name };
}

/**
 * Tells whether an image is the configured pause image, which the kubelet must never
 * garbage-collect. Compared in Docker's familiar form so `docker.io/library/x` matches `x`.
 */
export function pinnedMatcher(pauseImage: string): (img: DockerImageLike) => boolean {
  const p = parseRef(pauseImage);
  if (!p) return () => false;
  // by digest it pins through RepoDigests (`repo@sha256:...`, which carry no tag), by tag through RepoTags
  const want = p.digest ? familiarRef(`${p.domain}/${p.path}@${p.digest}`) : familiarRef(pauseImage);
  return (img) => ((p.digest ? img.RepoDigests : img.RepoTags) ?? []).some((r) => familiarRef(r) === want);
}

/** Docker's answer as a CRI Image; Docker's `<none>` placeholders are dropped. */
export function toCriImage(img: DockerImageLike, isPinned: (img: DockerImageLike) => boolean): CriImage {
  return {
    id: img.Id,
    repo_tags: (img.RepoTags ?? []).filter((t) => t !== '<none>:<none>'),
    repo_digests: (img.RepoDigests ?? []).filter((d) => !d.startsWith('<none>')),
    size: String(img.Size),
    ...imageUser(img.Config?.User ?? undefined),
    spec: { image: img.Id, annotations: {} },
    pinned: isPinned(img),
  };
}

/** Inspect by id, id prefix, tag or digest reference; undefined when Docker has no such image. */
export async function inspectImage(
  deps: Pick<ServiceDeps, 'docker'>,
  ref: string,
): Promise<Docker.ImageInspectInfo | undefined> {
  try {
    return await deps.docker.inspectImage(ref);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** `image.image` of a request, validated (INVALID_ARGUMENT when empty or not a reference/id). */
export function requireImageRef(spec: { image: string } | null | undefined, field = 'image.image'): string {
  const ref = spec?.image ?? '';
  if (!ref) throw invalidArgument(`${field} must be set`);
  if (!isImageRef(ref)) throw invalidArgument(`${field} ${JSON.stringify(ref.slice(0, 80))} is not an image reference`);
  return ref;
}
