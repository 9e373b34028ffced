import { spawn } from 'child_process';
import type { PluginConf } from './cni-config';
import { findPlugin } from './cni-config';

export type CniCommand = 'ADD' | 'DEL' | 'CHECK';

export interface CniInvocation {
  command: CniCommand;
  containerId: string;
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

/** An error a plugin reported, with its name and the spec's code/msg/details. */
export class CniPluginError extends Error {
  constructor(
    readonly plugin: string,
    readonly command: CniCommand,
    readonly cniCode: number | undefined,
    msg: string,
  ) {
    super(`CNI plugin ${plugin} ${command} failed: ${msg}`);
    this.name = 'CniPluginError';
  }
}

/** Runs one plugin binary with its config on stdin; resolves with its parsed stdout (ADD) or undefined. */
export function execPlugin(conf: PluginConf & { name: string; cniVersion: string }, inv: CniInvocation): Promise<unknown> {
  const bin = findPlugin(conf.type, inv.binDirs);
  if (!bin) return Promise.reject(new CniPluginError(conf.type, inv.command, undefined, `binary not found in ${inv.binDirs.join(':')}`));
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [], { env: cniEnv(inv), stdio: ['pipe', 'pipe', 'pipe'] });
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
      child.kill('SIGKILL');
      finish(new CniPluginError(conf.type, inv.command, undefined, why));
    };
    const timer = setTimeout(() => kill(`timed out after ${inv.timeoutMs} ms`), inv.timeoutMs);
    const onAbort = (): void => kill('cancelled');
    inv.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.on('error', (err) => finish(new CniPluginError(conf.type, inv.command, undefined, err.message)));
    child.on('close', (code) => {
      if (code !== 0) {
        let msg = stderr.trim() || `exit code ${code}`;
        let cniCode: number | undefined;
        try {
          const e = JSON.parse(stdout) as { code?: number; msg?: string; details?: string };
          cniCode = e.code;
          msg = [e.msg, e.details].filter(Boolean).join(': ') || msg;
        } catch {
          /* not the spec's error JSON */
        }
        return finish(new CniPluginError(conf.type, inv.command, cniCode, msg));
      }
      if (inv.command !== 'ADD' || !stdout.trim()) return finish(null, undefined);
      try {
        finish(null, JSON.parse(stdout));
      } catch {
        finish(new CniPluginError(conf.type, inv.command, undefined, `unparsable result: ${stdout.slice(0, 200)}`));
      }
    });
    child.stdin.on('error', () => undefined); // a plugin may exit before reading its config
    child.stdin.end(JSON.stringify(conf));
  });
}

/** Pod IPs of a CNI result (0.3.0+ `ips`, or 0.2.0 `ip4`/`ip6`), IPv4 first. */
export function resultIps(result: unknown): string[] {
  const r = result as { ips?: Array<{ address?: string }>; ip4?: { ip?: string }; ip6?: { ip?: string } } | undefined;
  const addrs = r?.ips?.map((i) => i.address ?? '') ?? [r?.ip4?.ip ?? '', r?.ip6?.ip ?? ''];
  const ips = addrs.filter(Boolean).map((a) => a.split('/')[0]);
  return [...ips.filter((ip) => !ip.includes(':')), ...ips.filter((ip) => ip.includes(':'))];
}
