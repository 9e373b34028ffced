import type { PluginConf } from './cni-config';
import { findPlugin } from './cni-config';
import { directLauncher, type PluginLauncher } from './cni-launch';

export type CniCommand = 'ADD' | 'DEL' | 'CHECK';

/** A plugin's stdin: its own entry plus the list's name and version (and prevResult/runtimeConfig). */
export type PluginStdin = PluginConf & { name: string; cniVersion: string };

export interface CniInvocation {
  command: CniCommand;
  containerId: string;
  /** Netns path; empty is allowed for DEL (the spec's "netns is gone"). */
  netns: string;
  ifName: string;
  /** K8S_POD_* and friends, joined into CNI_ARGS. */
  args: Record<string, string>;
  binDirs: string[];
  timeoutMs: number;
  signal?: AbortSignal;
}

/** CNI_ARGS as the kubelet's CNI code builds it. */
export function cniArgs(args: Record<string, string>): string {
  return ['IgnoreUnknown=1', ...Object.entries(args).map(([k, v]) => `${k}=${v}`)].join(';');
}

/** The plugin's whole environment: PATH (plugins run iptables, ip...) plus the CNI_* variables, nothing else of ours. */
export function cniEnv(inv: CniInvocation): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
    CNI_COMMAND: inv.command,
    CNI_CONTAINERID: inv.containerId,
    CNI_NETNS: inv.netns,
    CNI_IFNAME: inv.ifName,
    CNI_ARGS: cniArgs(inv.args),
    CNI_PATH: inv.binDirs.join(':'),
  };
}

/** An error a plugin reported (or its exec failing), with its name and the spec's code. */
export class CniPluginError extends Error {
  constructor(
    readonly plugin: string,
    readonly command: CniCommand,
    readonly cniCode: number | undefined,
    readonly detail: string,
  ) {
    super(`CNI plugin ${plugin} ${command} failed: ${detail}`);
    this.name = 'CniPluginError';
  }
}

/** The message of a failed plugin: the spec's error JSON on stdout (msg: details), else stderr, else the exit status. */
export function pluginFailure(stdout: string, stderr: string, status: string): { code?: number; msg: string } {
  try {
    const e = JSON.parse(stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    const msg = [e.msg, e.details].filter((s): s is string => typeof s === 'string' && s !== '').join(': ');
    if (msg) return { code: typeof e.code === 'number' ? e.code : undefined, msg };
  } catch {
    /* not the spec's error JSON */
  }
  return { msg: stderr.trim() || stdout.trim() || status };
}

/** Runs one plugin binary with its config on stdin; resolves with its parsed stdout (ADD) or undefined. */
export async function execPlugin(
  conf: PluginStdin,
  inv: CniInvocation,
  launcher: PluginLauncher = directLauncher,
): Promise<unknown> {
  const fail = (why: string, code?: number): CniPluginError => new CniPluginError(conf.type, inv.command, code, why);
  const bin = findPlugin(conf.type, inv.binDirs);
  if (!bin) throw fail(`binary not found in ${inv.binDirs.join(':')}`);
  // an already-aborted signal never fires 'abort': check before starting anything
  if (inv.signal?.aborted) throw fail('cancelled');
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const run = launcher.launch(bin, cniEnv(inv), JSON.stringify(conf));
    const stopped = new Promise<never>((_, reject) => {
      const kill = (why: string): void => {
        run.kill();
        reject(fail(why));
      };
      timer = setTimeout(() => kill(`timed out after ${inv.timeoutMs} ms`), inv.timeoutMs);
      onAbort = () => kill('cancelled');
      inv.signal?.addEventListener('abort', onAbort, { once: true });
    });
    const exit = await Promise.race([run.done.catch((err: Error) => Promise.reject(fail(err.message))), stopped]);
    if (exit.code !== 0) {
      const status = exit.signal ? `killed by ${exit.signal}` : `exit code ${String(exit.code)}`;
      const f = pluginFailure(exit.stdout, exit.stderr, status);
      throw fail(f.msg, f.code);
    }
    // an ADD that prints nothing is off-spec but harmless: the caller keeps the previous result
    if (inv.command !== 'ADD' || !exit.stdout.trim()) return undefined;
    return parseResult(exit.stdout, fail);
  } finally {
    clearTimeout(timer);
    if (onAbort) inv.signal?.removeEventListener('abort', onAbort);
  }
}

/** A plugin's ADD output as a JSON object, else the error saying what it printed. */
function parseResult(stdout: string, fail: (why: string) => CniPluginError): unknown {
  let result: unknown;
  try {
    result = JSON.parse(stdout) as unknown;
  } catch {
    /* not JSON: reported below like any other non-object */
  }
  if (typeof result !== 'object' || result === null) throw fail(`unparsable result: ${stdout.slice(0, 200)}`);
  return result;
}

/** Pod IPs of a CNI result (0.3.0+ `ips`, or 0.2.0 `ip4`/`ip6`), prefix length stripped, IPv4 first. */
export function resultIps(result: unknown): string[] {
  if (typeof result !== 'object' || result === null) return [];
  const r = result as { ips?: unknown; ip4?: { ip?: unknown }; ip6?: { ip?: unknown } };
  const addrs: unknown[] = Array.isArray(r.ips)
    ? r.ips.map((i: unknown) => (i as { address?: unknown } | null)?.address)
    : [r.ip4?.ip, r.ip6?.ip];
  const ips = addrs.filter((a): a is string => typeof a === 'string' && a !== '').map((a) => a.split('/')[0]);
  return [...ips.filter((ip) => !ip.includes(':')), ...ips.filter((ip) => ip.includes(':'))];
}
