import { readFileSync } from 'fs';
import * as path from 'path';

/**
 * How the bench starts the crishim it measures. By default `dist/main.js` under this node with the
 * flags of its `#!` line, as the README's first command (`./dist/main.js`) runs it. With
 * `--executable=PATH` the single executable `npm run package` builds (or the one a .deb installed),
 * with the Environment= of the packaged unit: what an operator who installs the package runs,
 * bundle and all.
 */
export interface DaemonCommand {
  command: string;
  /** Arguments before the daemon's own (node's flags and the script, or none). */
  args: string[];
  env: NodeJS.ProcessEnv;
  /** How the bench's header names it. */
  label: string;
}

/** Node flags on a script's `#!/usr/bin/env -S node <flags>` line. */
export function shebangFlags(script: string): string[] {
  const first = readFileSync(script, 'utf8').split('\n', 1)[0];
  const m = /^#!\S*env -S node((?: --\S+)*)\s*$/.exec(first);
  return m ? m[1].trim().split(/\s+/).filter(Boolean) : [];
}

/** A unit's Environment= assignments: ours are written one unquoted KEY=VALUE per line. */
export function unitEnvironment(unit: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of unit.matchAll(/^Environment=([A-Za-z_][A-Za-z0-9_]*)=(\S*)$/gm)) env[m[1]] = m[2];
  return env;
}

/** `--executable=PATH` from the bench's arguments. */
export function executableArg(argv: string[]): string | undefined {
  const value = argv.find((a) => a.startsWith('--executable='))?.slice('--executable='.length);
  return value ? path.resolve(value) : undefined;
}

/**
 * The command for one daemon. `nodeFlags` (e.g. --expose-gc) go on node's command line, or for the
 * single executable, which takes no node flags as arguments, into NODE_OPTIONS after the unit's
 * (so flags NODE_OPTIONS refuses, such as --cpu-prof, stop the executable at its start).
 */
export function daemonCommand(repo: string, executable: string | undefined, nodeFlags: string[]): DaemonCommand {
  if (executable === undefined) {
    const main = path.join(repo, 'dist', 'main.js');
    const flags = shebangFlags(main);
    return {
      command: process.execPath,
      args: [...flags, ...nodeFlags, main],
      env: { ...process.env },
      label: `dist/main.js under node ${process.version}${flags.length > 0 ? ` ${flags.join(' ')}` : ''}`,
    };
  }
  const unit = unitEnvironment(readFileSync(path.join(repo, 'packaging', 'systemd', 'crishim.service'), 'utf8'));
  const nodeOptions = [unit.NODE_OPTIONS ?? '', ...nodeFlags].filter(Boolean).join(' ');
  return {
    command: executable,
    args: [],
    env: { ...process.env, ...unit, NODE_OPTIONS: nodeOptions },
    label: `the single executable ${executable} (NODE_OPTIONS=${unit.NODE_OPTIONS ?? ''})`,
  };
}
