/**
 * The Docker Engine API objects crishim reads and sends, in crishim's own types: the
 * fields it uses, named as the Engine API names them (so a newcomer can look them up in
 * Docker's API reference). Nothing here comes from dockerode, so the engine behind
 * DockerEngine can change without touching its users. Import as
 * `import type * as Docker from '../docker/types'` to keep the familiar `Docker.X` names.
 */

export type Labels = Record<string, string>;

/** Docker registry credentials in the shape the Engine API takes (X-Registry-Auth). */
export interface RegistryAuth {
  username?: string;
  password?: string;
  auth?: string;
  serveraddress?: string;
  identitytoken?: string;
  registrytoken?: string;
}

export interface DeviceMapping {
  PathOnHost: string;
  PathInContainer: string;
  CgroupPermissions: string;
}

export type MountType = 'bind' | 'volume' | 'tmpfs' | 'image';
export type MountPropagation = 'private' | 'rprivate' | 'shared' | 'rshared' | 'slave' | 'rslave';

/** A `HostConfig.Mounts` entry of a create request. */
export interface MountSettings {
  Target: string;
  Source: string;
  Type: MountType;
  ReadOnly?: boolean;
  BindOptions?: { Propagation: MountPropagation; NonRecursive?: boolean };
  TmpfsOptions?: { SizeBytes: number; Mode: number };
}
export type MountConfig = MountSettings[];

export interface PortBinding {
  HostIp?: string;
  HostPort?: string;
}

export interface Ulimit {
  Name?: string;
  Soft?: number;
  Hard?: number;
}

/** What a container may be given and held to; the part of it `docker update` can change is ContainerUpdate. */
export interface HostConfig {
  Binds?: string[];
  Mounts?: MountConfig;
  LogConfig?: { Type: string; Config: Record<string, string> };
  NetworkMode?: string;
  PortBindings?: Record<string, PortBinding[]>;
  RestartPolicy?: { Name: string; MaximumRetryCount?: number };
  CapAdd?: string[] | null;
  CapDrop?: string[] | null;
  Dns?: string[];
  DnsOptions?: string[];
  DnsSearch?: string[];
  ExtraHosts?: string[];
  GroupAdd?: string[];
  IpcMode?: string;
  PidMode?: string;
  UTSMode?: string;
  UsernsMode?: string;
  CgroupnsMode?: string;
  Privileged?: boolean;
  ReadonlyRootfs?: boolean;
  SecurityOpt?: string[] | null;
  Tmpfs?: Record<string, string>;
  ShmSize?: number;
  Sysctls?: Record<string, string>;
  Runtime?: string;
  MaskedPaths?: string[];
  ReadonlyPaths?: string[];
  OomScoreAdj?: number;
  CgroupParent?: string;
  CpuShares?: number;
  CpuPeriod?: number;
  CpuQuota?: number;
  CpusetCpus?: string;
  CpusetMems?: string;
  NanoCpus?: number;
  Memory?: number;
  MemoryReservation?: number;
  MemorySwap?: number;
  MemorySwappiness?: number;
  OomKillDisable?: boolean;
  PidsLimit?: number;
  Devices?: DeviceMapping[] | null;
  DeviceCgroupRules?: string[];
  Init?: boolean;
  Ulimits?: Ulimit[];
  AutoRemove?: boolean;
}

/** The resources `docker update` changes on a live container. */
export type ContainerUpdate = Pick<
  HostConfig,
  | 'CpuShares'
  | 'CpuPeriod'
  | 'CpuQuota'
  | 'CpusetCpus'
  | 'CpusetMems'
  | 'Memory'
  | 'MemorySwap'
  | 'MemoryReservation'
  | 'OomScoreAdj'
  | 'PidsLimit'
>;

/** The body of POST /containers/create, plus the `name` sent in its query. */
export interface ContainerCreateOptions {
  name?: string;
  Hostname?: string;
  Domainname?: string;
  User?: string;
  AttachStdin?: boolean;
  AttachStdout?: boolean;
  AttachStderr?: boolean;
  Tty?: boolean;
  OpenStdin?: boolean;
  StdinOnce?: boolean;
  Env?: string[];
  Cmd?: string[];
  Entrypoint?: string | string[];
  Image?: string;
  Labels?: Labels;
  WorkingDir?: string;
  NetworkDisabled?: boolean;
  ExposedPorts?: Record<string, object>;
  StopSignal?: string;
  StopTimeout?: number;
  HostConfig?: HostConfig;
}

/** A row of GET /containers/json. */
export interface ContainerInfo {
  Id: string;
  Names: string[];
  Image: string;
  ImageID: string;
  Created: number;
  Labels: Labels;
  /** `created`, `running`, `exited`... */
  State: string;
  Status: string;
}

/** GET /containers/{id}/json. */
export interface ContainerInspectInfo {
  Id: string;
  Name: string;
  Created: string;
  Image: string;
  LogPath: string;
  RestartCount: number;
  ResolvConfPath: string;
  HostnamePath: string;
  HostsPath: string;
  State: {
    Status: string;
    Running: boolean;
    Paused: boolean;
    Restarting: boolean;
    OOMKilled: boolean;
    Dead: boolean;
    Pid: number;
    ExitCode: number;
    Error: string;
    StartedAt: string;
    FinishedAt: string;
  };
  HostConfig: HostConfig;
  /** The storage driver's paths; `Data.UpperDir` is the writable layer for overlay2. */
  GraphDriver?: { Name: string; Data?: Record<string, string> | object };
  Mounts: Array<{
    Type: string;
    Name?: string;
    Source: string;
    Destination: string;
    Mode: string;
    RW: boolean;
    Propagation: string;
  }>;
  Config: {
    Hostname: string;
    User: string;
    Tty: boolean;
    OpenStdin: boolean;
    StdinOnce: boolean;
    Env: string[];
    Cmd: string[];
    Image: string;
    WorkingDir: string;
    Entrypoint?: string | string[] | null;
    Labels: Labels;
    StopSignal?: string;
  };
  NetworkSettings: {
    SandboxKey: string;
    IPAddress?: string;
    Networks: Record<string, { IPAddress: string; GlobalIPv6Address?: string; Gateway?: string }>;
  };
}

/** GET /exec/{id}/json. */
export interface ExecInspectInfo {
  ID: string;
  Running: boolean;
  ExitCode: number | null;
  ContainerID: string;
  /** Host pid of the exec'd process, 0 before it started. */
  Pid: number;
}

/** A row of GET /images/json. */
export interface ImageInfo {
  Id: string;
  RepoTags?: string[] | null;
  RepoDigests?: string[] | null;
  Size: number;
  Created: number;
  Labels?: Labels | null;
}

/** GET /images/{ref}/json. */
export interface ImageInspectInfo {
  Id: string;
  RepoTags: string[];
  RepoDigests: string[];
  Size: number;
  Created: string;
  Architecture?: string;
  Os?: string;
  Parent?: string;
  RootFS?: { Type: string; Layers?: string[] };
  GraphDriver?: { Name: string };
  Config?: {
    User?: string;
    Env?: string[];
    Cmd?: string[] | null;
    Entrypoint?: string[] | string | null;
    WorkingDir?: string;
    Labels?: Labels | null;
    Volumes?: Record<string, object> | null;
    StopSignal?: string;
  } | null;
}

/** The part of GET /info crishim reads. */
export interface EngineSystemInfo {
  CgroupDriver?: string;
  CgroupVersion?: string;
  DockerRootDir?: string;
  Runtimes?: Record<string, unknown>;
  DefaultRuntime?: string;
  SystemTime?: string;
  NCPU?: number;
  MemTotal?: number;
  SecurityOptions?: string[];
  [field: string]: unknown;
}

/** The part of GET /version crishim reads. */
export interface EngineVersion {
  Version: string;
  ApiVersion: string;
  [field: string]: unknown;
}
