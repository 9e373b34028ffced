import type { Config } from './config';
import type { CrashAt } from './crash-points';
import type { CheckpointStore } from './checkpoint/store';
import type { DockerEngine } from './docker/engine';
import type { CapabilityGrant } from './docker/capabilities';
import type { EngineInfo } from './docker/engine-info';
import type { ExecExits } from './docker/exec-exits';
import type { Logger } from './logging/logger';
import type { NetworkPlugin } from './network/types';
import type { StateStore } from './state/store';
import type { StreamingServer } from './streaming/server';

/** Everything the CRI handlers share; built once in main.ts (and by the e2e harness). */
export interface ServiceDeps {
  docker: DockerEngine;
  config: Config;
  network: NetworkPlugin;
  checkpoints: CheckpointStore;
  engine: EngineInfo;
  logger: Logger;
  /** oom_score_adj for pause containers: -998 as dockershim, or the host's lowest allowed value. */
  sandboxOomScoreAdj: number;
  /** Lowest oom_score_adj this host accepts; container requests below it are raised to it. */
  oomScoreAdjFloor: number;
  /**
   * TCP ports crishim itself listens on (streaming server, metrics), filled in as they
   * start: a pod's hostPort there would capture another pod's exec/attach traffic.
   */
  ownPorts?: Set<number>;
  /** The event-fed view List and Status read (src/state/); without it they ask Docker each time. */
  state?: StateStore;
  /** Exec exit codes heard on the view's event stream; without it ExecSync inspects for them. */
  execExits?: ExecExits;
  /** What privileged containers and `ALL` can be given here, detected once at start-up. */
  capabilities?: CapabilityGrant;
  /** Fault injection for the recovery tests (CRISHIM_CRASH_AT, read once by daemon.ts); absent: none. */
  crashAt?: CrashAt;
}

/** What ExecSync, Exec, Attach and PortForward need (the e2e tests build it without the rest). */
export interface ExecDeps {
  docker: DockerEngine;
  streaming: StreamingServer;
  logger: Logger;
  /**
   * The view, so an exec probe's "is it running?" costs no inspect: the kubelet probes every
   * pod every few seconds, all day. Without it each lookup asks Docker.
   */
  state?: StateStore;
  /** Where an exec's end is heard rather than inspected for (see src/docker/exec-exits.ts). */
  execExits?: ExecExits;
}
