/**
 * The dockerode types the rest of crishim names, re-exported so that dockerode itself is
 * imported only under src/docker/ (an eslint rule enforces it). Import as
 * `import type * as Docker from '../docker/types'` to keep the familiar `Docker.X` names.
 */
import type Dockerode from 'dockerode';

export type Container = Dockerode.Container;
export type ContainerCreateOptions = Dockerode.ContainerCreateOptions;
export type ContainerInfo = Dockerode.ContainerInfo;
export type ContainerInspectInfo = Dockerode.ContainerInspectInfo;
export type DeviceMapping = Dockerode.DeviceMapping;
export type Exec = Dockerode.Exec;
export type ExecInspectInfo = Dockerode.ExecInspectInfo;
export type HostConfig = Dockerode.HostConfig;
export type ImageInspectInfo = Dockerode.ImageInspectInfo;
export type MountConfig = Dockerode.MountConfig;
export type MountSettings = Dockerode.MountSettings;
export type MountType = Dockerode.MountType;
