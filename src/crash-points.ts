/**
 * Fault injection for the recovery tests: when CRISHIM_CRASH_AT names a point,
 * the daemon kills itself there with SIGKILL, as a power cut or OOM kill would.
 * The variable is read once, by the daemon's wiring; without it (production)
 * every point is a no-op.
 */
export type CrashPoint =
  | 'sandbox:after-create'
  | 'sandbox:after-checkpoint'
  | 'sandbox:after-start'
  | 'sandbox:mid-network'
  | 'sandbox:after-network'
  | 'container:after-create';

/** Called at each crash point; kills the process at the configured one. */
export type CrashAt = (point: CrashPoint) => void;

/** No fault injection. */
export const noCrash: CrashAt = () => undefined;

/** The crash points `CRISHIM_CRASH_AT` in `env` asks for; `kill` ends the process (tests pass a fake). */
export function crashPointsFromEnv(
  env: NodeJS.ProcessEnv,
  kill: () => void = () => process.kill(process.pid, 'SIGKILL'),
): CrashAt {
  const at = env.CRISHIM_CRASH_AT;
  if (!at) return noCrash;
  return (point) => {
    if (point === at) kill();
  };
}
