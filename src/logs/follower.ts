import type { CriLogFile } from '../logging/cri-log';

/** One container's copy into its CRI log file (local json-file or logs API): what the log manager drives. */
export interface LogFollower {
  /** The CRI log file, once open (reopened after the kubelet rotates it, closed on stop). */
  readonly file: CriLogFile | undefined;
  /** Copies until the container has exited and its output is in the file, or until stopped; never rejects. */
  run(): Promise<void>;
  /** The container was started again: keep copying even if it had exited. */
  restart(): void;
  /** Someone saw the container exited: look for its last output now rather than at the next poll. */
  checkNow(): void;
  stop(): void;
}
