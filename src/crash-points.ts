/**
 * Fault injection for the recovery tests: when CRISHIM_CRASH_AT names a point,
 * the daemon kills itself there with SIGKILL, as a power cut or OOM kill would.
 * Without the variable (production) this is a no-op.
 */
export type CrashPoint =
  | 'sandbox:after-create'
  | 'sandbox:after-checkpoint'
  | 'sandbox:after-start'
  | 'sandbox:mid-network'
  | 'sandbox:after-network'
  | 'container:after-create';

export function crashPoint(point: CrashPoint): void {
  if (process.env.CRISHIM_CRASH_AT === point) process.kill(process.pid, 'SIGKILL');
}
