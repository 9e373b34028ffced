import type { DockerApi } from './client';
import type { Logger } from '../logging/logger';
import { CriError, isDockerNotFound, toCriError } from '../server/errors';
import { status } from '@grpc/grpc-js';

/** Docker registry credentials in the shape the Engine API takes (X-Registry-Auth). */
export interface RegistryAuth {
  username?: string;
  password?: string;
  auth?: string;
  serveraddress?: string;
  identitytoken?: string;
  registrytoken?: string;
}

/** Adds `:latest` when a reference has neither tag nor digest, as `docker pull` does. */
export function normalizeRef(ref: string): string {
  if (ref.includes('@')) return ref;
  const lastSlash = ref.lastIndexOf('/');
  return ref.slice(lastSlash + 1).includes(':') ? ref : `${ref}:latest`;
}

/** Pulls an image and waits for the pull to finish; registry errors keep the registry's message. */
export async function pullImage(
  docker: DockerApi,
  ref: string,
  opts: { auth?: RegistryAuth; signal?: AbortSignal; logger: Logger },
): Promise<void> {
  const image = normalizeRef(ref);
  opts.logger.info('pulling image', { image });
  const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) => {
    docker.pull(image, { authconfig: opts.auth, abortSignal: opts.signal }, (err: unknown, s?: NodeJS.ReadableStream) =>
      err || !s ? reject(err ?? new Error('docker returned no pull stream')) : resolve(s),
    );
  }).catch((err: unknown) => {
    throw toCriError(err, `pull image ${image}`);
  });
  await new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      (stream as unknown as { destroy?: () => void }).destroy?.();
      reject(new CriError(status.CANCELLED, `pull image ${image}: cancelled`));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    docker.modem.followProgress(stream, (err: Error | null) => {
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(new CriError(status.UNKNOWN, `pull image ${image}: ${err.message}`, { cause: err }));
      else resolve();
    });
  });
}

/** Makes sure an image is present, pulling it when absent. */
export async function ensureImage(docker: DockerApi, ref: string, opts: { signal?: AbortSignal; logger: Logger }): Promise<void> {
  try {
    await docker.getImage(ref).inspect();
    return;
  } catch (err) {
    if (!isDockerNotFound(err)) throw toCriError(err, `inspect image ${ref}`);
  }
  await pullImage(docker, ref, opts);
}
