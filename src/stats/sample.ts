import type * as Docker from '../docker/types';
import type { CgroupPaths } from './cgroup-path';
import type { InterfaceUsage } from './netdev';
import type { CgroupUsage } from './usage';

/** What stats need about a container beyond Docker's list answer; learnt from one inspect, then cached. */
export interface ContainerFacts {
  /** Init pid; 0 when the container was not running at inspect time. */
  pid: number;
  /** /proc/<pid>/cgroup as read right after the inspect: the pid is still this container's while it reads the same. */
  cgroupText?: string;
  cgroup?: CgroupPaths;
  /** overlay2's upper dir: the writable layer. */
  upperDir?: string;
  /** HostConfig.CgroupParent ('' = Docker's default parent, shared by every container). */
  cgroupParent: string;
  hostNetwork: boolean;
}

/** A container (or pause container) to read, with its state from the caller's list. */
export interface Target {
  id: string;
  running: boolean;
  /**
   * The state view's inspect answer, when the caller listed from it: facts are then worked
   * out without another lookup, and a container is read without a single await.
   */
  info?: Docker.ContainerInspectInfo;
}

export type TargetKind = 'container' | 'sandbox';

export interface Sample {
  id: string;
  /** Wall-clock time of the reading, ns since the epoch (a decimal string, as CRI timestamps travel). */
  timestamp: string;
  usage: CgroupUsage;
  /** CPU use since the previous reading of the same container, in nanocores. */
  nanoCores?: number;
  writable?: { bytes: number; inodes: number };
  /** Facts the pod aggregation needs (cgroup paths, netns pid). */
  facts?: ContainerFacts;
}

export interface PodSample {
  timestamp: string;
  /** The pod cgroup's usage, or the sum of its containers' (pause included). */
  usage: CgroupUsage;
  nanoCores?: number;
  source: 'pod-cgroup' | 'sum';
  /** Interfaces of the pod netns; undefined when not ready or on the host network. */
  network?: InterfaceUsage[];
}

/** Now as a CRI timestamp: ns since the epoch, in decimal (string arithmetic: no bigint per reading). */
export const wallNanos = (): string => `${Date.now()}000000`;
