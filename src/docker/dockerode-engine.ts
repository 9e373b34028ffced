import type { Duplex } from 'stream';
import type Dockerode from 'dockerode';
import type { DockerApi } from './client';
import type {
  AttachOptions,
  CreateOptions,
  DockerEngine,
  EngineStream,
  EventsOptions,
  ExecCreateOptions,
  Filters,
  ImageRemoval,
  LogsOptions,
  PullOptions,
  PullProgress,
  RemoveOptions,
} from './engine';
import { dockerMessage, fromDockerError, isDockerNotFound } from './errors';
import { pullError } from './images';
import { createWithPolicy, NameTakenError } from './name-conflict';
import type * as Docker from './types';
import { cancelled } from '../errors';

const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number } | null)?.statusCode;

/**
 * Runs one Docker call and turns its failure into a domain error naming `what`
 * (operation and object, e.g. `start container 3f2a...`).
 */
async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw fromDockerError(err, what);
  }
}

/**
 * DockerEngine over dockerode: the only place that knows dockerode's handles, its
 * option spellings and the HTTP statuses behind Docker's answers (304 not modified,
 * 404 no such object, 409 conflict).
 */
export class DockerodeEngine implements DockerEngine {
  constructor(private readonly api: DockerApi) {}

  inspectContainer(ref: string): Promise<Docker.ContainerInspectInfo> {
    return call(`inspect container ${ref}`, () => this.api.getContainer(ref).inspect());
  }

  async findContainer(ref: string): Promise<Docker.ContainerInspectInfo | undefined> {
    try {
      return await this.api.getContainer(ref).inspect();
    } catch (err) {
      if (isDockerNotFound(err)) return undefined;
      throw fromDockerError(err, `inspect container ${ref}`);
    }
  }

  listContainers(filters?: Filters): Promise<Docker.ContainerInfo[]> {
    return call('list containers', () => this.api.listContainers({ all: true, ...(filters ? { filters } : {}) }));
  }

  createContainer(spec: Docker.ContainerCreateOptions, opts: CreateOptions = {}): Promise<string> {
    const create = async (s: Docker.ContainerCreateOptions): Promise<string> => {
      try {
        const body: Dockerode.ContainerCreateOptions = { ...s, ...(opts.signal ? { abortSignal: opts.signal } : {}) };
        return (await this.api.createContainer(body)).id;
      } catch (err) {
        if (statusOf(err) === 409 && s.name)
          throw new NameTakenError(s.name, dockerMessage(err), `create container ${s.name}`, err);
        throw fromDockerError(err, `create container ${s.name ?? ''}`.trim());
      }
    };
    return createWithPolicy(
      {
        create,
        find: (ref) => this.findContainer(ref),
        remove: (id) => this.removeContainer(id, { volumes: true, missingOk: true }),
      },
      spec,
      opts.onConflict ?? { kind: 'fail' },
    );
  }

  async startContainer(id: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    await call(`start container ${id}`, () =>
      this.api.getContainer(id).start(opts.signal ? { abortSignal: opts.signal } : {}),
    );
  }

  async stopContainer(id: string, graceSeconds: number, opts: { missingOk?: boolean } = {}): Promise<void> {
    try {
      await this.api.getContainer(id).stop({ t: graceSeconds });
    } catch (err) {
      // 304: already stopped, which is what the caller wants
      if (statusOf(err) === 304 || (opts.missingOk && isDockerNotFound(err))) return;
      throw fromDockerError(err, `stop container ${id}`);
    }
  }

  async killContainer(id: string, signal?: string): Promise<void> {
    await call(`kill container ${id}`, () => this.api.getContainer(id).kill(signal ? { signal } : {}));
  }

  async removeContainer(id: string, opts: RemoveOptions = {}): Promise<void> {
    try {
      await this.api.getContainer(id).remove({ force: opts.force ?? false, v: opts.volumes ?? false });
    } catch (err) {
      if (opts.missingOk && isDockerNotFound(err)) return;
      throw fromDockerError(err, `remove container ${id}`);
    }
  }

  async updateContainer(id: string, update: Docker.ContainerUpdate): Promise<void> {
    await call(`update container ${id}`, () => this.api.getContainer(id).update(update));
  }

  private logsOptions(opts: LogsOptions): { stdout: true; stderr: true; timestamps: boolean; since?: number } {
    // dockerode types `since` as a number; Docker takes the fractional seconds Docker logs use too
    return {
      stdout: true,
      stderr: true,
      timestamps: opts.timestamps ?? false,
      ...(opts.since ? { since: opts.since as unknown as number } : {}),
    };
  }

  async containerLogs(id: string, opts: LogsOptions = {}): Promise<Buffer> {
    const all = await call(`read logs of container ${id}`, () =>
      this.api.getContainer(id).logs({ ...this.logsOptions(opts), follow: false }),
    );
    return Buffer.isBuffer(all) ? all : Buffer.from(all as unknown as string);
  }

  async followContainerLogs(id: string, opts: LogsOptions = {}): Promise<EngineStream> {
    const s = await call(`follow logs of container ${id}`, () =>
      this.api.getContainer(id).logs({ ...this.logsOptions(opts), follow: true }),
    );
    return s as unknown as EngineStream;
  }

  async attachContainer(id: string, opts: AttachOptions): Promise<Duplex> {
    const s = await call(`attach to container ${id}`, () =>
      this.api
        .getContainer(id)
        .attach({ stream: true, stdin: opts.stdin, stdout: opts.stdout, stderr: opts.stderr, hijack: true }),
    );
    return s as unknown as Duplex;
  }

  async resizeContainer(id: string, size: { height: number; width: number }): Promise<void> {
    await call(`resize container ${id}`, () => this.api.getContainer(id).resize({ h: size.height, w: size.width }));
  }

  async createExec(containerId: string, o: ExecCreateOptions): Promise<string> {
    const exec = await call(`exec in container ${containerId}`, () =>
      this.api.getContainer(containerId).exec({
        Cmd: o.cmd,
        AttachStdin: o.stdin,
        AttachStdout: o.stdout,
        AttachStderr: o.stderr && !o.tty,
        Tty: o.tty,
        ...(o.signal ? { abortSignal: o.signal } : {}),
      }),
    );
    return exec.id;
  }

  startExec(execId: string, opts: { stdin: boolean; tty: boolean }): Promise<Duplex> {
    return call(`start exec ${execId}`, () =>
      this.api.getExec(execId).start({ hijack: true, stdin: opts.stdin, Tty: opts.tty }),
    );
  }

  inspectExec(execId: string): Promise<Docker.ExecInspectInfo> {
    return call(`inspect exec ${execId}`, () => this.api.getExec(execId).inspect());
  }

  async resizeExec(execId: string, size: { height: number; width: number }): Promise<void> {
    await call(`resize exec ${execId}`, () => this.api.getExec(execId).resize({ h: size.height, w: size.width }));
  }

  inspectImage(ref: string): Promise<Docker.ImageInspectInfo> {
    return call(`inspect image ${ref}`, () => this.api.getImage(ref).inspect());
  }

  listImages(): Promise<Docker.ImageInfo[]> {
    return call('list images', () => this.api.listImages());
  }

  async pullImage(ref: string, opts: PullOptions, onProgress?: (p: PullProgress) => void): Promise<void> {
    const { signal } = opts;
    if (signal?.aborted) throw cancelled(`pull image ${ref}: cancelled`);
    const stream = await new Promise<NodeJS.ReadableStream>((resolve, reject) => {
      this.api.pull(ref, { authconfig: opts.auth, abortSignal: signal }, (err: unknown, s?: NodeJS.ReadableStream) =>
        err || !s ? reject(err ?? new Error('docker returned no pull stream')) : resolve(s),
      );
    }).catch((err: unknown) => {
      throw pullError(ref, err);
    });
    // Docker reports registry failures inside the progress stream, which followProgress does not treat as errors
    let streamError: string | undefined;
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        (stream as unknown as { destroy?: () => void }).destroy?.();
        reject(cancelled(`pull image ${ref}: cancelled`));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.api.modem.followProgress(
        stream,
        (err: Error | null) => {
          signal?.removeEventListener('abort', onAbort);
          if (signal?.aborted) return; // onAbort already rejected
          if (err) reject(pullError(ref, err));
          else if (streamError !== undefined) reject(pullError(ref, new Error(streamError)));
          else resolve();
        },
        (evt: PullProgress) => {
          if (evt.error || evt.errorDetail) streamError = evt.errorDetail?.message || evt.error || 'unknown error';
          onProgress?.(evt);
        },
      );
    });
  }

  removeImage(ref: string, opts: { force?: boolean } = {}): Promise<ImageRemoval[]> {
    return call(
      `remove image ${ref}`,
      async () => (await this.api.getImage(ref).remove({ force: opts.force ?? false })) as ImageRemoval[],
    );
  }

  async imageDistribution(ref: string): Promise<void> {
    await call(`resolve image ${ref} in its registry`, () => this.api.getImage(ref).distribution());
  }

  async imageLayersSize(): Promise<number | undefined> {
    const d = (await call('read docker disk usage', () => this.api.df())) as { LayersSize?: number };
    return d.LayersSize;
  }

  async events(opts: EventsOptions): Promise<EngineStream> {
    // dockerode types `since` as a number; the API takes the string form too
    const s = await call('subscribe to docker events', () =>
      this.api.getEvents({
        ...(opts.since ? { since: opts.since as unknown as number } : {}),
        ...(opts.filters ? { filters: opts.filters } : {}),
      }),
    );
    return s as unknown as EngineStream;
  }

  async ping(): Promise<void> {
    await call('ping docker', () => this.api.ping());
  }

  info(): Promise<Docker.EngineSystemInfo> {
    return call('read docker info', () => this.api.info() as Promise<Docker.EngineSystemInfo>);
  }

  version(): Promise<Docker.EngineVersion> {
    return call('read docker version', () => this.api.version() as unknown as Promise<Docker.EngineVersion>);
  }
}
