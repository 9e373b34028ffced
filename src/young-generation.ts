import { setFlagsFromString } from 'v8';

/**
 * V8 grows the young generation's semi-spaces from 1 MiB up to 16 MiB each when much of
 * what it allocates survives a scavenge, and does not give the pages back: under the
 * kubelet's polling that growth was the largest single share of crishim's RSS (docs/benchmark-history.md,
 * 2026-11-23). `--max-semi-space-size` only acts at V8's start, so on a `#!` line or in
 * NODE_OPTIONS it missed `node dist/main.js` and any start that did not copy it. The growth
 * factor, unlike the size, is read at each scavenge: set to 1 here, first thing, the
 * semi-spaces stay at their initial 1 MiB whatever started the daemon. An operator who
 * sizes them (`--max-semi-space-size` in node's flags or NODE_OPTIONS) keeps that.
 * Answers whether the growth was pinned.
 */
export function pinYoungGeneration(execArgv: string[], env: NodeJS.ProcessEnv): boolean {
  const chosen = [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].some((f) =>
    /^--(max|min)[-_]semi[-_]space[-_]size\b/.test(f),
  );
  if (chosen) return false;
  setFlagsFromString('--semi-space-growth-factor=1');
  return true;
}

pinYoungGeneration(process.execArgv, process.env);
