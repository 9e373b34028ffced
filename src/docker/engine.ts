/**
 * The Docker Engine as crishim sees it: exactly the calls it makes, Promise-based, typed
 * with crishim's own types (src/docker/types.ts), and failing with the domain errors of
 * src/errors.ts (not-found, failed-precondition for conflicts, unavailable when dockerd
 * cannot be reached...). No caller looks at HTTP status codes; the one implementation over
 * dockerode is dockerode-engine.ts, the instrumentation wraps any engine
 * (instrumented-engine.ts), and unit tests use the in-memory fake in test/support/.
 */
import type { Duplex, Readable } from 'stream';
import type * as Docker from './types';

/** Docker's list/events `filters`, e.g. `{ label: ['io.kubernetes.docker.type'] }`. */
export type Filters = Record<string, string[]>;

/**
 * What to do when the name a container is created under is already taken
 * (HTTP 409 from dockerd). One policy object, whichever caller creates.
 */
export type NameConflictPolicy =
  /** Fail with `already-exists`, naming the holder. */
  | { kind: 'fail' }
  /**
   * Remove the holder and create again when `isLeftover` says it is ours and stands for the
   * same object (a crash between Docker's create and our reply leaves one); otherwise fail.
   */
  | {
      kind: 'reclaim';
      isLeftover: (holder: Docker.ContainerInspectInfo) => boolean;
      /** Before the leftover is removed (to log it). */
      onReclaim?: (holder: Docker.ContainerInspectInfo) => void;
      /** After it was removed (views of Docker's containers drop it). */
      onRemoved?: (holderId: string) => void;
    }
  /** Create once more under `rename(name)` (a fresh suffix), as dockershim does for sandboxes. */
  | { kind: 'suffix'; rename: (name: string) => string; onRetry?: (name: string) => void };

export interface CreateOptions {
  /** Aborts the HTTP call (the create may still happen in Docker). */
  signal?: AbortSignal;
  /** Default: `fail`. */
  onConflict?: NameConflictPolicy;
}

export interface RemoveOptions {
  force?: boolean;
  /** Also remove anonymous volumes (`docker rm -v`). */
  volumes?: boolean;
  /** A container that is already gone counts as removed. */
  missingOk?: boolean;
}

export interface LogsOptions {
  since?: string;
  timestamps?: boolean;
}

export interface ExecCreateOptions {
  cmd: string[];
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  signal?: AbortSignal;
}

export interface AttachOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface PullOptions {
  auth?: Docker.RegistryAuth;
  /** Aborting cancels the HTTP call, which makes dockerd cancel the pull. */
  signal?: AbortSignal;
}

/** One line of Docker's pull progress stream. */
export interface PullProgress {
  status?: string;
  id?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/** What `docker rmi` did: one entry per untagged reference or deleted layer/image. */
export interface ImageRemoval {
  Untagged?: string;
  Deleted?: string;
}

export interface EventsOptions {
  /** Unix seconds. */
  since?: string;
  filters?: Filters;
}

/** A stream that the caller can cut (events, followed logs). */
export type EngineStream = Readable & { destroy(): void };

export interface DockerEngine {
  // -- containers -----------------------------------------------------------
  /** Throws `not-found` when Docker does not know `ref` (id, unique prefix or name). */
  inspectContainer(ref: string): Promise<Docker.ContainerInspectInfo>;
  /** Like inspectContainer, but `undefined` when the container does not exist. */
  findContainer(ref: string): Promise<Docker.ContainerInspectInfo | undefined>;
  listContainers(filters?: Filters): Promise<Docker.ContainerInfo[]>;
  /** Creates a container and answers its id; a taken name is handled by `opts.onConflict`. */
  createContainer(spec: Docker.ContainerCreateOptions, opts?: CreateOptions): Promise<string>;
  startContainer(id: string, opts?: { signal?: AbortSignal }): Promise<void>;
  /** Stops with `graceSeconds` before SIGKILL; an already stopped container (and with `missingOk` a gone one) is success. */
  stopContainer(id: string, graceSeconds: number, opts?: { missingOk?: boolean }): Promise<void>;
  killContainer(id: string, signal?: string): Promise<void>;
  removeContainer(id: string, opts?: RemoveOptions): Promise<void>;
  updateContainer(id: string, update: Docker.ContainerUpdate): Promise<void>;
  /** The container's output as Docker multiplexes it (see demux.ts), until now. */
  containerLogs(id: string, opts?: LogsOptions): Promise<Buffer>;
  /** The container's output as it comes, multiplexed, until the container stops or the stream is destroyed. */
  followContainerLogs(id: string, opts?: LogsOptions): Promise<EngineStream>;
  /** Hijacked connection to the container's stdio (multiplexed unless it has a tty). */
  attachContainer(id: string, opts: AttachOptions): Promise<Duplex>;
  resizeContainer(id: string, size: { height: number; width: number }): Promise<void>;

  // -- exec -----------------------------------------------------------------
  /** Creates an exec instance and answers its id. */
  createExec(containerId: string, opts: ExecCreateOptions): Promise<string>;
  /** Starts it with a hijacked connection: stdin goes in, output (multiplexed unless tty) comes out. */
  startExec(execId: string, opts: { stdin: boolean; tty: boolean }): Promise<Duplex>;
  inspectExec(execId: string): Promise<Docker.ExecInspectInfo>;
  resizeExec(execId: string, size: { height: number; width: number }): Promise<void>;

  // -- images ---------------------------------------------------------------
  /** Throws `not-found` when the image is absent. */
  inspectImage(ref: string): Promise<Docker.ImageInspectInfo>;
  listImages(): Promise<Docker.ImageInfo[]>;
  /** Pulls and reports each progress line; errors inside the progress stream reject too. */
  pullImage(ref: string, opts: PullOptions, onProgress?: (p: PullProgress) => void): Promise<void>;
  removeImage(ref: string, opts?: { force?: boolean }): Promise<ImageRemoval[]>;
  /** Asks the image's registry for its manifest (reachability and credentials), without pulling. */
  imageDistribution(ref: string): Promise<void>;
  /** Bytes of all image layers (`docker system df`). */
  imageLayersSize(): Promise<number | undefined>;

  // -- system ---------------------------------------------------------------
  events(opts: EventsOptions): Promise<EngineStream>;
  ping(): Promise<void>;
  info(): Promise<Docker.EngineSystemInfo>;
  version(): Promise<Docker.EngineVersion>;
}
