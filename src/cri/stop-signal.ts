import { Signal, type Signal__Output } from '../generated/runtime/v1/Signal';

/**
 * The CRI Signal enum and Docker's StopSignal strings, both ways. Docker spells
 * real-time signals `SIGRTMIN+3` / `SIGRTMAX-2` where the enum says
 * `SIGRTMINPLUS3` / `SIGRTMAXMINUS2`.
 */

/** Docker StopSignal for a CreateContainer stop_signal; undefined leaves the image's (or Docker's SIGTERM). */
export function dockerStopSignal(sig: string | undefined): string | undefined {
  if (!sig || sig === Signal.SIGNAL_RUNTIME_DEFAULT) return undefined;
  return sig
    .replace(/^SIGNAL_/, '')
    .replace(/^SIGRTMINPLUS/, 'SIGRTMIN+')
    .replace(/^SIGRTMAXMINUS/, 'SIGRTMAX-');
}

/** Linux signal numbers Docker may hold instead of a name (`--stop-signal 15`). */
const NUMBERED: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  5: 'SIGTRAP',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  10: 'SIGUSR1',
  11: 'SIGSEGV',
  12: 'SIGUSR2',
  13: 'SIGPIPE',
  14: 'SIGALRM',
  15: 'SIGTERM',
  16: 'SIGSTKFLT',
  17: 'SIGCHLD',
  18: 'SIGCONT',
  19: 'SIGSTOP',
  20: 'SIGTSTP',
  21: 'SIGTTIN',
  22: 'SIGTTOU',
  23: 'SIGURG',
  24: 'SIGXCPU',
  25: 'SIGXFSZ',
  26: 'SIGVTALRM',
  27: 'SIGPROF',
  28: 'SIGWINCH',
  29: 'SIGIO',
  30: 'SIGPWR',
  31: 'SIGSYS',
};

/**
 * The signal a stop sends, as the CRI enum: Docker's StopSignal (from the request
 * or the image), else Docker's default SIGTERM. Signals the enum lacks give
 * SIGNAL_RUNTIME_DEFAULT.
 */
export function criStopSignal(dockerSignal: string | undefined): Signal__Output {
  let sig = (dockerSignal || 'SIGTERM').toUpperCase();
  if (/^[0-9]+$/.test(sig)) sig = NUMBERED[Number(sig)] ?? '';
  else if (!sig.startsWith('SIG')) sig = `SIG${sig}`;
  const value = `SIGNAL_${sig.replace(/^SIGRTMIN\+/, 'SIGRTMINPLUS').replace(/^SIGRTMAX-/, 'SIGRTMAXMINUS')}`;
  return (Object.values(Signal) as string[]).includes(value)
    ? (value as Signal__Output)
    : Signal.SIGNAL_RUNTIME_DEFAULT;
}
