import { setFlagsFromString } from 'v8';

/**
 * V8 flags the daemon sets on itself, first thing, rather than on a `#!` line or in NODE_OPTIONS:
 * V8 reads each of these as it works, so set here they hold however the daemon was started
 * (`#!` line, `node dist/main.js`, the single executable). An operator who names one in node's
 * flags or NODE_OPTIONS, either way, keeps that choice. Why each: docs/how-it-works.md, "Memory
 * and the V8 settings".
 */
interface StartFlag {
  /** what the daemon sets */
  readonly flag: string;
  /** node flags by which an operator has already chosen */
  readonly chosenBy: RegExp;
}

export const START_FLAGS: readonly StartFlag[] = [
  // V8 grows the young generation's semi-spaces from 1 MiB up to 16 MiB each when much of what it
  // allocates survives a scavenge, and keeps the pages: under the kubelet's polling the largest
  // single share of crishim's RSS. `--max-semi-space-size` only acts at V8's start,
  // the growth factor at each scavenge: at 1 the semi-spaces stay at their initial 1 MiB.
  { flag: '--semi-space-growth-factor=1', chosenBy: /^--(max|min)[-_]semi[-_]space[-_]size\b/ },
  // GCs start sooner and keep less slack, the compilers emit less code. Under a real 1.32 kubelet
  // at 110 pods it keeps the RSS about 2.5 MiB lower for about 0.5 % of a core more, still well
  // under cri-dockerd's CPU; without it the 110-pod load's RSS peaks over the 80 MB target.
  { flag: '--optimize-for-size', chosenBy: /^--(no-)?optimize[-_]for[-_]size$/ },
  // Sparkplug, the baseline compiler, turns every warm function's bytecode into machine code and
  // keeps it, start-up code included: under the kubelet's load the code space grows from 2.0 to
  // 3.5 MiB in seven minutes, and without it the RSS is 2.5-3 MiB lower, at the same CPU and
  // stats-call cost within the runs' spread. Hot paths still reach TurboFan.
  { flag: '--no-sparkplug', chosenBy: /^--(no-)?sparkplug$/ },
];

/** Whether node's own flags or NODE_OPTIONS hold a flag matching `chosenBy`. */
export function operatorChose(chosenBy: RegExp, execArgv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  return [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].some((f) => chosenBy.test(f));
}

/** Sets each start flag the operator did not choose on; answers the flags it set. */
export function setStartFlags(
  execArgv: readonly string[],
  env: NodeJS.ProcessEnv,
  set: (flag: string) => void = setFlagsFromString,
): string[] {
  const setHere = START_FLAGS.filter((s) => !operatorChose(s.chosenBy, execArgv, env)).map((s) => s.flag);
  setHere.forEach(set);
  return setHere;
}

setStartFlags(process.execArgv, process.env);
