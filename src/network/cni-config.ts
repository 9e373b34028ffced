import { promises as fsp, existsSync } from 'fs';
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

/** Parses one config file; a single-plugin `.conf` is wrapped into a list. Throws with the reason. */
export function parseConfFile(file: string, text: string): NetworkConfList {
  const raw = JSON.parse(text) as Record<string, unknown>;
  if (typeof raw !== 'object' || raw === null) throw new Error('not a JSON object');
  const name = raw.name;
  const cniVersion = raw.cniVersion;
  if (typeof name !== 'string' || !name) throw new Error('missing "name"');
  if (typeof cniVersion !== 'string' || !cniVersion) throw new Error('missing "cniVersion"');
  let plugins: unknown = raw.plugins;
  if (plugins === undefined) {
    if (typeof raw.type !== 'string') throw new Error('neither "plugins" nor "type"');
    const { name: _n, cniVersion: _v, ...single } = raw;
    plugins = [single];
  }
  if (!Array.isArray(plugins) || plugins.length === 0) throw new Error('"plugins" must be a non-empty list');
  for (const [i, p] of plugins.entries()) {
    if (typeof p !== 'object' || p === null || typeof (p as PluginConf).type !== 'string' || !(p as PluginConf).type) {
      throw new Error(`plugins[${i}] has no "type"`);
    }
    if (/[/\\]|\.\./.test((p as PluginConf).type)) throw new Error(`plugins[${i}].type must be a plain binary name`);
  }
  return { cniVersion, name, plugins: plugins as PluginConf[], file };
}

/** Where a plugin binary lives in the bin dirs, or undefined. */
export function findPlugin(type: string, binDirs: string[]): string | undefined {
  for (const dir of binDirs) {
    const p = path.join(dir, type);
    if (existsSync(p)) return p;
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
 * content change and skipped; a chosen config whose plugin binaries (or
 * `loopback`) are missing makes the network not ready, naming them.
 */
export async function probeConfDir(confDir: string, binDirs: string[], logger: Logger, seen = new Map<string, string>()): Promise<ProbeResult> {
  let names: string[];
  try {
    names = (await fsp.readdir(confDir)).filter((n) => EXTENSIONS.includes(path.extname(n))).sort();
  } catch {
    return { problem: `no CNI configuration directory ${confDir}` };
  }
  const problems: string[] = [];
  for (const n of names) {
    const file = path.join(confDir, n);
    let text: string;
    try {
      text = await fsp.readFile(file, 'utf8');
    } catch {
      continue;
    }
    let conf: NetworkConfList;
    try {
      conf = parseConfFile(file, text);
    } catch (err) {
      const why = `invalid CNI config ${file}: ${(err as Error).message}`;
      if (seen.get(file) !== text) logger.warn('skipping invalid CNI config', { file, reason: (err as Error).message });
      seen.set(file, text);
      problems.push(why);
      continue;
    }
    const missing = [...conf.plugins.map((p) => p.type), 'loopback'].filter((t) => !findPlugin(t, binDirs));
    if (missing.length > 0) {
      return { config: conf, problem: `CNI config ${file} (network ${conf.name}) needs plugin ${missing.join(', ')}, not found in ${binDirs.join(':')}` };
    }
    return { config: conf };
  }
  return { problem: problems.length ? problems.join('; ') : `no CNI configuration file in ${confDir}` };
}
