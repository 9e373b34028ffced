import type { Config } from '../config';
import type { EngineSnapshot } from '../docker/engine-info';
import type { ProbeResult } from '../network/cni-config';

export type CheckStatus = 'ok' | 'warn' | 'fail';

/** One line of `crishim doctor`: what was found, and what to do when it is not ok. */
export interface CheckResult {
  /** Short stable id, e.g. `cni-config` (tooling keys on it in --output json). */
  name: string;
  status: CheckStatus;
  found: string;
  /** What the operator should do; empty when ok. */
  action?: string;
}

/** Whether something listens on a Unix socket path. */
export type SocketState = 'absent' | 'live' | 'stale' | 'not-a-socket';

/**
 * Everything the checks read from the host, behind one seam so tests inject
 * answers; src/doctor/probes.ts reads the real host with the daemon's own code.
 */
export interface HostProbes {
  imagePresent(ref: string): Promise<boolean>;
  /** Asks Docker to resolve the image in its registry (no pull); the error when it cannot. */
  registryError(ref: string): Promise<string | undefined>;
  cniConfig(confDir: string, binDirs: string[]): ProbeResult;
  /** Creates the directory if needed and writes a file in it; the error when that fails. */
  writeError(dir: string): Promise<string | undefined>;
  socketState(socketPath: string): Promise<SocketState>;
  /** The lowest oom_score_adj this process may set (src/docker/oom-score.ts). */
  oomScoreFloor(): Promise<number>;
  /** Bounding capability sets of the local dockerd processes (empty when none is local). */
  dockerdCapBnd(): Promise<bigint[]>;
  /** The command line of each local kubelet process (none when no kubelet runs here). */
  kubeletArgs(): Promise<string[][]>;
  /** `--version` of the running kubelet's executable, else of the kubelet on PATH (`v1.32.1`). */
  kubeletVersion(): Promise<string | undefined>;
  /** The highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap). */
  lastCap(): Promise<number>;
  /** iptables' FORWARD policy (`ACCEPT`, `DROP`), or undefined when it cannot be read. */
  forwardPolicy(): Promise<string | undefined>;
  readText(file: string): Promise<string | undefined>;
  exists(file: string): Promise<boolean>;
  /** Where an executable is found on PATH (plus the sbin directories), or undefined. */
  which(bin: string): string | undefined;
}

export interface DoctorContext {
  config: Config;
  /** What the daemon's engine probe found (reachability, versions, cgroup driver). */
  engine: EngineSnapshot;
  probes: HostProbes;
}

export interface Check {
  name: string;
  run(ctx: DoctorContext): Promise<CheckResult>;
}
