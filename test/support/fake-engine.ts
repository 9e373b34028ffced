/**
 * The one in-memory DockerEngine every unit test uses: containers with Docker's states,
 * images, an event stream, name conflicts (through the same conflict policy code as the
 * real engine) and failures a test injects per call. It throws the same domain errors as
 * DockerodeEngine, so code under test sees what it would see against dockerd.
 */
import { PassThrough, type Duplex } from 'stream';
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
} from '../../src/docker/engine';
import type { DockerEvent } from '../../src/docker/events';
import { DockerError } from '../../src/docker/errors';
import { createWithPolicy, NameTakenError } from '../../src/docker/name-conflict';
import type * as Docker from '../../src/docker/types';
import { DomainError } from '../../src/errors';

export type EngineCall = keyof DockerEngine;

/** A container of the fake: what inspect answers, plus the output logs replay (multiplexed). */
export interface FakeContainer {
  info: Docker.ContainerInspectInfo;
  logs: Buffer;
}

export interface FakeExec {
  info: Docker.ExecInspectInfo;
  opts: ExecCreateOptions;
  /** The hijacked connection a test can write output into and end. */
  stream: PassThrough;
}

let seq = 0;
const hexId = (): string => (++seq).toString(16).padStart(8, '0').repeat(8);

/** A complete inspect answer with `overrides` applied (State and Config merged field by field). */
export function inspectInfo(
  overrides: Partial<Omit<Docker.ContainerInspectInfo, 'State' | 'Config'>> & {
    State?: Partial<Docker.ContainerInspectInfo['State']>;
    Config?: Partial<Docker.ContainerInspectInfo['Config']>;
  } = {},
): Docker.ContainerInspectInfo {
  const { State, Config, ...rest } = overrides;
  return {
    Id: hexId(),
    Name: '/fake',
    Created: new Date(0).toISOString(),
    Image: 'sha256:' + '0'.repeat(64),
    LogPath: '',
    RestartCount: 0,
    ResolvConfPath: '',
    HostnamePath: '',
    HostsPath: '',
    HostConfig: {},
    Mounts: [],
    NetworkSettings: { SandboxKey: '', Networks: {} },
    ...rest,
    State: {
      Status: 'created',
      Running: false,
      Paused: false,
      Restarting: false,
      OOMKilled: false,
      Dead: false,
      Pid: 0,
      ExitCode: 0,
      Error: '',
      StartedAt: '0001-01-01T00:00:00Z',
      FinishedAt: '0001-01-01T00:00:00Z',
      ...State,
    },
    Config: {
      Hostname: '',
      User: '',
      Tty: false,
      OpenStdin: false,
      StdinOnce: false,
      Env: [],
      Cmd: [],
      Image: '',
      WorkingDir: '',
      Labels: {},
      ...Config,
    },
  };
}

/** Docker's multiplexed framing of one payload (stream 1 = stdout, 2 = stderr). */
export function frame(stream: 1 | 2, payload: string | Buffer): Buffer {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

const notFound = (what: string): DomainError => new DockerError('not-found', 'no such object', what);

/**
 * An exec's host pid: above Linux's PID_MAX_LIMIT, so no process has it. A handler that kills a
 * fake exec's process tree (a timed-out ExecSync does) must not reach a real process on the host.
 */
const NO_SUCH_PID = 4_194_305;

/** The event dockerd sends when an exec ends (what src/docker/exec-exits.ts hears). */
export function execDieEvent(execID: string, exitCode: string, containerId = 'c'.repeat(64)): DockerEvent {
  return {
    Type: 'container',
    Action: 'exec_die',
    Actor: { ID: containerId, Attributes: { execID, exitCode } },
    time: 0,
    timeNano: 0,
  };
}

export class FakeEngine implements DockerEngine {
  readonly containers = new Map<string, FakeContainer>();
  readonly images = new Map<string, Docker.ImageInspectInfo>();
  readonly execs = new Map<string, FakeExec>();
  /** Every call, in order, with its arguments. */
  readonly calls: Array<{ call: EngineCall; args: unknown[] }> = [];
  /** What info() answers. */
  systemInfo: Docker.EngineSystemInfo = {
    CgroupDriver: 'cgroupfs',
    CgroupVersion: '1',
    Runtimes: { runc: {} },
    DefaultRuntime: 'runc',
  };
  versionInfo: Docker.EngineVersion = { Version: '20.10.0', ApiVersion: '1.41' };
  layersSize: number | undefined = 0;
  /** The host pid a started container gets. */
  startPid = 4242;
  /** Progress lines pullImage reports, then an error if set. */
  pullScript: { progress: PullProgress[]; error?: DomainError } = { progress: [] };
  private readonly failures = new Map<EngineCall, Array<Error | ((args: unknown[]) => Error | undefined)>>();
  private readonly subscribers = new Set<{ stream: PassThrough; filters?: Filters }>();
  /** Every events() subscription, in order: a test can write raw lines into a stream or end it. */
  readonly eventSubscriptions: Array<{ stream: PassThrough; opts: EventsOptions }> = [];

  /**
   * Makes the next call of `call` fail with `err` (queued: one failure per call). A function
   * is a standing rule instead: it decides every later call from its arguments and answers
   * undefined to let that one through.
   */
  fail(call: EngineCall, err: Error | ((args: unknown[]) => Error | undefined)): this {
    const q = this.failures.get(call) ?? [];
    q.push(err);
    this.failures.set(call, q);
    return this;
  }

  /** How many times `call` was made. */
  count(call: EngineCall): number {
    return this.calls.filter((c) => c.call === call).length;
  }

  /** Adds a container as it would exist in Docker; answers its id. */
  addContainer(info: Docker.ContainerInspectInfo, logs: Buffer = Buffer.alloc(0)): string {
    this.containers.set(info.Id, { info, logs });
    return info.Id;
  }

  addImage(image: Partial<Docker.ImageInspectInfo> & { RepoTags?: string[] }): Docker.ImageInspectInfo {
    const full: Docker.ImageInspectInfo = {
      Id: `sha256:${hexId()}`,
      RepoTags: [],
      RepoDigests: [],
      Size: 0,
      Created: new Date(0).toISOString(),
      ...image,
    };
    this.images.set(full.Id, full);
    return full;
  }

  /** Delivers an event to every subscriber whose filters it matches. */
  emit(ev: Partial<DockerEvent> & { Action: string; id?: string; attributes?: Record<string, string> }): void {
    const now = Date.now();
    const full: DockerEvent = {
      Type: ev.Type ?? 'container',
      Action: ev.Action,
      Actor: ev.Actor ?? { ID: ev.id ?? '', Attributes: ev.attributes ?? {} },
      time: ev.time ?? Math.floor(now / 1000),
      timeNano: ev.timeNano ?? now * 1e6,
    };
    for (const s of this.subscribers) {
      if (s.filters?.type && !s.filters.type.includes(full.Type)) continue;
      s.stream.write(JSON.stringify(full) + '\n');
    }
  }

  /** Ends every event stream (as a dockerd restart does). */
  dropEventStreams(): void {
    for (const s of this.subscribers) s.stream.end();
    this.subscribers.clear();
  }

  private record(call: EngineCall, args: unknown[]): void {
    this.calls.push({ call, args });
    const q = this.failures.get(call);
    if (!q?.length) return;
    const next = q[0];
    if (typeof next !== 'function') {
      q.shift();
      throw next;
    }
    const err = next(args);
    if (err) throw err;
  }

  /** Docker's lookup: full id, unique id prefix, or name. */
  private resolve(ref: string): FakeContainer | undefined {
    const byId = this.containers.get(ref);
    if (byId) return byId;
    const name = ref.startsWith('/') ? ref : `/${ref}`;
    const matches = [...this.containers.values()].filter((c) => c.info.Name === name || c.info.Id.startsWith(ref));
    return matches.length === 1 ? matches[0] : undefined;
  }

  private must(ref: string, what: string): FakeContainer {
    const c = this.resolve(ref);
    if (!c) throw notFound(`${what} ${ref}`);
    return c;
  }

  private resolveImage(ref: string): Docker.ImageInspectInfo | undefined {
    for (const img of this.images.values()) {
      if (
        img.Id === ref ||
        img.Id === `sha256:${ref}` ||
        img.Id.replace(/^sha256:/, '').startsWith(ref.replace(/^sha256:/, ''))
      )
        return img;
      if (img.RepoTags.includes(ref) || img.RepoTags.includes(`${ref}:latest`) || img.RepoDigests.includes(ref))
        return img;
    }
    return undefined;
  }

  async inspectContainer(ref: string): Promise<Docker.ContainerInspectInfo> {
    this.record('inspectContainer', [ref]);
    return structuredClone(this.must(ref, 'inspect container').info);
  }

  async findContainer(ref: string): Promise<Docker.ContainerInspectInfo | undefined> {
    this.record('findContainer', [ref]);
    const c = this.resolve(ref);
    return c && structuredClone(c.info);
  }

  async listContainers(filters?: Filters): Promise<Docker.ContainerInfo[]> {
    this.record('listContainers', [filters]);
    const labelOk = (labels: Record<string, string>): boolean =>
      (filters?.label ?? []).every((f) => {
        const eq = f.indexOf('=');
        return eq < 0 ? labels[f] !== undefined : labels[f.slice(0, eq)] === f.slice(eq + 1);
      });
    return [...this.containers.values()]
      .filter((c) => labelOk(c.info.Config.Labels ?? {}))
      .filter((c) => !filters?.id || filters.id.some((p) => c.info.Id.startsWith(p)))
      .filter((c) => !filters?.status || filters.status.includes(c.info.State.Status))
      .map((c) => ({
        Id: c.info.Id,
        Names: [c.info.Name],
        Image: c.info.Config.Image,
        ImageID: c.info.Image,
        Created: Math.floor(Date.parse(c.info.Created) / 1000),
        Labels: { ...c.info.Config.Labels },
        State: c.info.State.Status,
        Status: c.info.State.Status,
      }));
  }

  async createContainer(spec: Docker.ContainerCreateOptions, opts: CreateOptions = {}): Promise<string> {
    this.record('createContainer', [spec, opts]);
    const create = async (s: Docker.ContainerCreateOptions): Promise<string> => {
      const name = s.name ? `/${s.name}` : `/fake_${seq + 1}`;
      if ([...this.containers.values()].some((c) => c.info.Name === name)) {
        throw new NameTakenError(
          s.name ?? '',
          `Conflict. The container name "${name}" is already in use`,
          `create container ${s.name}`,
        );
      }
      const { name: _n, HostConfig, Labels, ...config } = s;
      const info = inspectInfo({
        Name: name,
        HostConfig: HostConfig ?? {},
        Config: { ...config, Labels: Labels ?? {} } as Partial<Docker.ContainerInspectInfo['Config']>,
      });
      this.containers.set(info.Id, { info, logs: Buffer.alloc(0) });
      this.emit({ Action: 'create', id: info.Id, attributes: { ...Labels } });
      return info.Id;
    };
    return createWithPolicy(
      {
        create,
        find: async (ref) => this.resolve(ref)?.info,
        remove: async (id) => void this.containers.delete(id),
      },
      spec,
      opts.onConflict ?? { kind: 'fail' },
    );
  }

  async startContainer(id: string): Promise<void> {
    this.record('startContainer', [id]);
    const c = this.must(id, 'start container');
    Object.assign(c.info.State, {
      Status: 'running',
      Running: true,
      Pid: this.startPid,
      StartedAt: new Date().toISOString(),
    });
    this.emit({ Action: 'start', id: c.info.Id, attributes: { ...c.info.Config.Labels } });
  }

  async stopContainer(id: string, graceSeconds: number, opts: { missingOk?: boolean } = {}): Promise<void> {
    this.record('stopContainer', [id, graceSeconds, opts]);
    const c = this.resolve(id);
    if (!c) {
      if (opts.missingOk) return;
      throw notFound(`stop container ${id}`);
    }
    if (!c.info.State.Running) return;
    this.exit(c, 137);
  }

  async killContainer(id: string, signal?: string): Promise<void> {
    this.record('killContainer', [id, signal]);
    const c = this.must(id, 'kill container');
    if (!c.info.State.Running)
      throw new DomainError('failed-precondition', `kill container ${id}: container is not running`);
    this.exit(c, 137);
  }

  /** Makes a running container exit with `code`, as its process ending would. */
  exit(c: FakeContainer, code: number): void {
    Object.assign(c.info.State, {
      Status: 'exited',
      Running: false,
      Pid: 0,
      ExitCode: code,
      FinishedAt: new Date().toISOString(),
    });
    this.emit({ Action: 'die', id: c.info.Id, attributes: { ...c.info.Config.Labels, exitCode: String(code) } });
  }

  async removeContainer(id: string, opts: RemoveOptions = {}): Promise<void> {
    this.record('removeContainer', [id, opts]);
    const c = this.resolve(id);
    if (!c) {
      if (opts.missingOk) return;
      throw notFound(`remove container ${id}`);
    }
    if (c.info.State.Running && !opts.force) {
      throw new DomainError('failed-precondition', `remove container ${id}: You cannot remove a running container`);
    }
    this.containers.delete(c.info.Id);
    this.emit({ Action: 'destroy', id: c.info.Id, attributes: { ...c.info.Config.Labels } });
  }

  async updateContainer(id: string, update: Docker.ContainerUpdate): Promise<void> {
    this.record('updateContainer', [id, update]);
    const c = this.must(id, 'update container');
    c.info.HostConfig = { ...c.info.HostConfig, ...update };
  }

  async containerLogs(id: string, opts: LogsOptions = {}): Promise<Buffer> {
    this.record('containerLogs', [id, opts]);
    return this.must(id, 'read logs of container').logs;
  }

  async followContainerLogs(id: string, opts: LogsOptions = {}): Promise<EngineStream> {
    this.record('followContainerLogs', [id, opts]);
    const c = this.must(id, 'follow logs of container');
    const s = new PassThrough();
    s.end(c.logs);
    return s;
  }

  async attachContainer(id: string, opts: AttachOptions): Promise<Duplex> {
    this.record('attachContainer', [id, opts]);
    this.must(id, 'attach to container');
    return new PassThrough();
  }

  async resizeContainer(id: string, size: { height: number; width: number }): Promise<void> {
    this.record('resizeContainer', [id, size]);
    this.must(id, 'resize container');
  }

  async createExec(containerId: string, opts: ExecCreateOptions): Promise<string> {
    this.record('createExec', [containerId, opts]);
    const c = this.must(containerId, 'exec in container');
    if (!c.info.State.Running)
      throw new DomainError('failed-precondition', `exec in container ${containerId}: container is not running`);
    const id = hexId();
    this.execs.set(id, {
      info: { ID: id, Running: false, ExitCode: null, ContainerID: c.info.Id, Pid: 0 },
      opts,
      stream: new PassThrough(),
    });
    return id;
  }

  async startExec(execId: string, opts: { stdin: boolean; tty: boolean }): Promise<Duplex> {
    this.record('startExec', [execId, opts]);
    const e = this.execs.get(execId);
    if (!e) throw notFound(`start exec ${execId}`);
    Object.assign(e.info, { Running: true, Pid: NO_SUCH_PID });
    return e.stream;
  }

  async inspectExec(execId: string): Promise<Docker.ExecInspectInfo> {
    this.record('inspectExec', [execId]);
    const e = this.execs.get(execId);
    if (!e) throw notFound(`inspect exec ${execId}`);
    return { ...e.info };
  }

  async resizeExec(execId: string, size: { height: number; width: number }): Promise<void> {
    this.record('resizeExec', [execId, size]);
    if (!this.execs.has(execId)) throw notFound(`resize exec ${execId}`);
  }

  async inspectImage(ref: string): Promise<Docker.ImageInspectInfo> {
    this.record('inspectImage', [ref]);
    const img = this.resolveImage(ref);
    if (!img) throw notFound(`inspect image ${ref}`);
    return structuredClone(img);
  }

  async listImages(): Promise<Docker.ImageInfo[]> {
    this.record('listImages', []);
    return [...this.images.values()].map((i) => ({
      Id: i.Id,
      RepoTags: i.RepoTags,
      RepoDigests: i.RepoDigests,
      Size: i.Size,
      Created: 0,
      Labels: i.Config?.Labels ?? null,
    }));
  }

  async pullImage(ref: string, opts: PullOptions, onProgress?: (p: PullProgress) => void): Promise<void> {
    this.record('pullImage', [ref, opts]);
    if (opts.signal?.aborted) throw new DomainError('cancelled', `pull image ${ref}: cancelled`);
    for (const p of this.pullScript.progress) onProgress?.(p);
    if (this.pullScript.error) throw this.pullScript.error;
    if (!this.resolveImage(ref)) this.addImage({ RepoTags: [ref] });
  }

  async removeImage(ref: string, opts: { force?: boolean } = {}): Promise<ImageRemoval[]> {
    this.record('removeImage', [ref, opts]);
    const img = this.resolveImage(ref);
    if (!img) throw notFound(`remove image ${ref}`);
    this.images.delete(img.Id);
    return [...img.RepoTags.map((t) => ({ Untagged: t })), { Deleted: img.Id }];
  }

  async imageDistribution(ref: string): Promise<void> {
    this.record('imageDistribution', [ref]);
  }

  async imageLayersSize(): Promise<number | undefined> {
    this.record('imageLayersSize', []);
    return this.layersSize;
  }

  async events(opts: EventsOptions): Promise<EngineStream> {
    this.record('events', [opts]);
    const sub = { stream: new PassThrough(), filters: opts.filters };
    this.subscribers.add(sub);
    this.eventSubscriptions.push({ stream: sub.stream, opts });
    sub.stream.on('close', () => this.subscribers.delete(sub));
    return sub.stream;
  }

  async ping(): Promise<void> {
    this.record('ping', []);
  }

  async info(): Promise<Docker.EngineSystemInfo> {
    this.record('info', []);
    return { ...this.systemInfo };
  }

  async version(): Promise<Docker.EngineVersion> {
    this.record('version', []);
    return { ...this.versionInfo };
  }
}
