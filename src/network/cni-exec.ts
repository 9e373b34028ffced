import { spawn } from 'child_process';
import type { PluginConf } from './cni-config';
import { findPlugin } from './cni-config';

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

/** A plugin printing more than this is broken; stop buffering rather than grow without bound. */
const MAX_OUTPUT = 1 << 20;

/** CNI_ARGS as the kubelet's CNI code builds it. */
export function cniArgs(args: Record<string, string>): string {
  return ['IgnoreUnknown=1', ...Object.entries(args).map(([k, v]) => `${k}=${v}`)].join(';');
}

/** The plugin's whole environment: PATH (plugins run iptables, ip...) plus the CNI_* variables, nothing else of ours. */
export function cniEnv(inv: CniInvocation): NodeJS.ProcessEnv {
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
export function execPlugin(conf: PluginStdin, inv: CniInvocation): Promise<unknown> {
  const fail = (why: string, code?: number): CniPluginError => new CniPluginError(conf.type, inv.command, code, why);
  const bin = findPlugin(conf.type, inv.binDirs);
  if (!bin) return Promise.reject(fail(`binary not found in ${inv.binDirs.join(':')}`));
  // an already-aborted signal never fires 'abort': check before spawning anything
  if (inv.signal?.aborted) return Promise.reject(fail('cancelled'));
  return new Promise((resolve, reject) => {
    // its own process group, so a timeout also kills what the plugin started (a shell script's sleep, iptables...)
    const child = spawn(bin, [], { env: cniEnv(inv), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let settled = false;
    const finish = (err: Error | null, value?: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      inv.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(value);
    };
    const kill = (why: string): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      finish(fail(why));
    };
    const timer = setTimeout(() => kill(`timed out after ${inv.timeoutMs} ms`), inv.timeoutMs);
    const onAbort = (): void => kill('cancelled');
    inv.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (c: Buffer) => {
      if (stdout.length < MAX_OUTPUT) stdout += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < MAX_OUTPUT) stderr += c.toString('utf8');
    });
    child.on('error', (err) => finish(fail(err.message)));
    child.on('close', (code, sig) => {
      if (code !== 0) {
        const f = pluginFailure(stdout, stderr, sig ? `killed by ${sig}` : `exit code ${String(code)}`);
        return finish(fail(f.msg, f.code));
      }
      // an ADD that prints nothing is off-spec but harmless: the caller keeps the previous result
      if (inv.command !== 'ADD' || !stdout.trim()) return finish(null, undefined);
      try {
        const result = JSON.parse(stdout) as unknown;
        if (typeof result !== 'object' || result === null) throw new Error('not an object');
        finish(null, result);
      } catch {
        finish(fail(`unparsable result: ${stdout.slice(0, 200)}`));
      }
    });
    child.stdin.on('error', () => undefined); // a plugin may exit before reading its config
    child.stdin.end(JSON.stringify(conf));
  });
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
