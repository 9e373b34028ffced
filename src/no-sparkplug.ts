import { setFlagsFromString } from 'v8';

/**
 * Sparkplug, V8's baseline compiler, turns the bytecode of every warm function into machine code
 * and keeps it: start-up code that never runs again included. Under the kubelet's load at 110 pods
 * that code grew V8's code space from 2.0 to 3.5 MiB over seven minutes; without Sparkplug it held
 * at 0.5-1.25 MiB, and ten minutes of that load read 74.2 MiB of RSS on the mean instead of 76.9,
 * at the same CPU within the runs' spread (docs/benchmark-history.md, the twenty-sixth session).
 * The hot paths still reach TurboFan. V8 reads the flag each time it picks a tier, so set here,
 * first thing, it holds however the daemon was started. An operator who names it in node's flags
 * or NODE_OPTIONS keeps that choice. Answers whether it was set here.
 */
export function skipSparkplug(
  execArgv: string[],
  env: NodeJS.ProcessEnv,
  set: (flags: string) => void = setFlagsFromString,
): boolean {
  const named = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].some((f) => /^--(no-)?sparkplug$/.test(f));
  if (named) return false;
  set('--no-sparkplug');
  return true;
}

skipSparkplug(process.execArgv, process.env);
