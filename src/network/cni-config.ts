import { accessSync, constants, readdirSync, readFileSync, statSync } from 'fs';
import * as path from 'path';
import type { Logger } from '../logging/logger';

/** One plugin entry of a network configuration list (everything else passes through to the plugin). */
export interface PluginConf {
  type: string;
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

export interface NetworkConfList {
  cniVersion: string;
  name: string;
  plugins: PluginConf[];
  /** File it came from. */
  file: string;
}

const EXTENSIONS = ['.conf', '.conflist', '.json'];

/** The plugin crishim runs on `lo` outside the configured chain (as the kubelet did), so it is always needed. */
export const LOOPBACK_PLUGIN = 'loopback';

/** Parses one config file; a single-plugin `.conf`/`.json` is wrapped into a list. Throws with the reason. */
export function parseConfFile(file: string, text: string): NetworkConfList {
  const raw = JSON.parse(text) as unknown;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('not a JSON object');
  const obj = raw as Record<string, unknown>;
  const name = obj.name;
  const cniVersion = obj.cniVersion;
  if (typeof name !== 'string' || !name) throw new Error('missing "name"');
  if (typeof cniVersion !== 'string' || !cniVersion) throw new Error('missing "cniVersion"');
  let plugins: unknown = obj.plugins;
  if (plugins === undefined) {
    if (typeof obj.type !== 'string') throw new Error('neither "plugins" nor "type"');
    // name and cniVersion live on the list; each plugin gets them again at exec time
    const { name: _n, cniVersion: _v, ...single } = obj;
    plugins = [single];
  }
  if (!Array.isArray(plugins) || plugins.length === 0) throw new Error('"plugins" must be a non-empty list');
  for (const [i, p] of (plugins as unknown[]).entries()) {
    const type = typeof p === 'object' && p !== null ? (p as Record<string, unknown>).type : undefined;
    if (typeof type !== 'string' || !type) throw new Error(`plugins[${i}] has no "type"`);
    // the type becomes a path under the bin dirs: never let it escape them
    if (/[/\\]|\.\./.test(type)) throw new Error(`plugins[${i}].type must be a plain binary name`);
  }
  return { cniVersion, name, plugins: plugins as PluginConf[], file };
}

/** Where a plugin binary lives in the bin dirs (an executable regular file), or undefined. */
export function findPlugin(type: string, binDirs: string[]): string | undefined {
  for (const dir of binDirs) {
    const p = path.join(dir, type);
    try {
      if (!statSync(p).isFile()) continue;
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

export interface ProbeResult {
  /** The chosen config; set even when its plugins are missing, so teardown can still use it. */
  config?: NetworkConfList;
  /** Why pods cannot be networked, when they cannot (no config, or missing plugin binaries). */
  problem?: string;
}

/**
 * The config pods get: the first file in lexical order that parses and names a
 * network, as the kubelet's CNI code chose. Unparsable files are logged once per
 * content change (`seen` remembers them across probes) and skipped; a chosen
 * config whose plugin binaries (or `loopback`) are missing makes the network
 * not ready, naming them.
 *
 * Synchronous on purpose: a conf dir holds a few small files, and a sync probe
 * lets status() be right from the moment the plugin manager exists.
 */
export function probeConfDirSync(
  confDir: string,
  binDirs: string[],
  logger: Logger,
  seen = new Map<string, string>(),
): ProbeResult {
  let names: string[];
  try {
    names = readdirSync(confDir)
      .filter((n) => EXTENSIONS.includes(path.extname(n)))
      .sort();
  } catch {
    return { problem: `no CNI configuration directory ${confDir}` };
  }
  const problems: string[] = [];
  for (const n of names) {
    const file = path.join(confDir, n);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue; // removed between readdir and read, or a directory
    }
    let conf: NetworkConfList;
    try {
      conf = parseConfFile(file, text);
    } catch (err) {
      const reason = (err as Error).message;
      if (seen.get(file) !== text) logger.warn('skipping invalid CNI config', { file, reason });
      seen.set(file, text);
      problems.push(`invalid CNI config ${file}: ${reason}`);
      continue;
    }
    const missing = [...new Set([...conf.plugins.map((p) => p.type), LOOPBACK_PLUGIN])].filter(
      (t) => !findPlugin(t, binDirs),
    );
    if (missing.length > 0) {
      return {
        config: conf,
        problem: `CNI config ${file} (network ${conf.name}) needs plugin ${missing.join(', ')}: binary not found in ${binDirs.join(':')}`,
      };
    }
    return { config: conf };
  }
  return {
    problem: problems.length
      ? `no valid CNI configuration file in ${confDir}: ${problems.join('; ')}`
      : `no CNI configuration file in ${confDir}`,
  };
}

/** Promise form of probeConfDirSync. */
export async function probeConfDir(
  confDir: string,
  binDirs: string[],
  logger: Logger,
  seen = new Map<string, string>(),
): Promise<ProbeResult> {
  return probeConfDirSync(confDir, binDirs, logger, seen);
}
