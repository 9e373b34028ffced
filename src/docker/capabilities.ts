import { promises as fsp } from 'fs';
import * as path from 'path';

/**
 * Which Linux capabilities Docker can give a container on this host.
 *
 * Docker's `Privileged: true` asks runc for every capability Docker knows. Where
 * dockerd's own bounding set lacks one (restricted VMs, nested containers, some CI
 * runners), runc fails the start with "unable to apply caps", so a privileged pod
 * could never run. Knowing the grantable set lets crishim hand out exactly what
 * the host has instead, as containerd does ("all capabilities of the current process").
 */

/** Capability names by number (linux/capability.h). */
export const CAPABILITY_NAMES: readonly string[] = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_DAC_READ_SEARCH',
  'CAP_FOWNER',
  'CAP_FSETID',
  'CAP_KILL',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_LINUX_IMMUTABLE',
  'CAP_NET_BIND_SERVICE',
  'CAP_NET_BROADCAST',
  'CAP_NET_ADMIN',
  'CAP_NET_RAW',
  'CAP_IPC_LOCK',
  'CAP_IPC_OWNER',
  'CAP_SYS_MODULE',
  'CAP_SYS_RAWIO',
  'CAP_SYS_CHROOT',
  'CAP_SYS_PTRACE',
  'CAP_SYS_PACCT',
  'CAP_SYS_ADMIN',
  'CAP_SYS_BOOT',
  'CAP_SYS_NICE',
  'CAP_SYS_RESOURCE',
  'CAP_SYS_TIME',
  'CAP_SYS_TTY_CONFIG',
  'CAP_MKNOD',
  'CAP_LEASE',
  'CAP_AUDIT_WRITE',
  'CAP_AUDIT_CONTROL',
  'CAP_SETFCAP',
  'CAP_MAC_OVERRIDE',
  'CAP_MAC_ADMIN',
  'CAP_SYSLOG',
  'CAP_WAKE_ALARM',
  'CAP_BLOCK_SUSPEND',
  'CAP_AUDIT_READ',
  'CAP_PERFMON',
  'CAP_BPF',
  'CAP_CHECKPOINT_RESTORE',
];

const AUDIT_READ = CAPABILITY_NAMES.indexOf('CAP_AUDIT_READ');

/** `SYS_ADMIN`, `cap_sys_admin` -> `CAP_SYS_ADMIN` (the CRI allows both spellings, as Docker does). */
export function normalizeCapability(name: string): string {
  const up = name.trim().toUpperCase();
  return up === 'ALL' || up.startsWith('CAP_') ? up : `CAP_${up}`;
}

/** Compares dotted API versions ("1.41" < "1.44"). */
export function apiAtLeast(apiVersion: string | undefined, wanted: string): boolean {
  if (!apiVersion) return false;
  const a = apiVersion.split('.').map(Number);
  const b = wanted.split('.').map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return true;
}

/**
 * The capabilities Docker itself knows (and refuses any other with "unknown capability").
 * Engines before 23.0 (API 1.42) stop at CAP_AUDIT_READ; checked against 20.10 here,
 * which answers `--cap-add CAP_PERFMON` with an error.
 */
export function dockerKnownCapabilities(apiVersion: string | undefined): string[] {
  const last = apiAtLeast(apiVersion, '1.42') ? CAPABILITY_NAMES.length - 1 : AUDIT_READ;
  return CAPABILITY_NAMES.slice(0, last + 1);
}

/** The capability numbers set in a `/proc/<pid>/status` hex mask (`CapBnd: 000001fffeffffff`). */
export function capabilitiesInMask(hex: string): Set<number> {
  const mask = BigInt(`0x${hex.trim()}`);
  const out = new Set<number>();
  for (let i = 0; i < 64; i++) if ((mask >> BigInt(i)) & 1n) out.add(i);
  return out;
}

export interface CapabilityGrant {
  /** Docker's own `Privileged: true` works: dockerd can grant every capability Docker knows. */
  dockerPrivilegedWorks: boolean;
  /** What a privileged container (or `ALL`) gets: Docker's known capabilities dockerd can grant. */
  grantable: string[];
  /** Docker knows them but dockerd's bounding set lacks them. */
  withheld: string[];
  /** Where the bounding set came from (for the start-up log line). */
  source: string;
}

/**
 * Grant for a known bounding set; `undefined` when it could not be read (a remote
 * Docker): then Docker's own privileged mode is trusted, as before.
 */
export function computeCapabilityGrant(
  apiVersion: string | undefined,
  bounding: Set<number> | undefined,
  source: string,
): CapabilityGrant {
  const known = dockerKnownCapabilities(apiVersion);
  if (!bounding) return { dockerPrivilegedWorks: true, grantable: known, withheld: [], source };
  const grantable = known.filter((_, i) => bounding.has(i));
  const withheld = known.filter((_, i) => !bounding.has(i));
  return { dockerPrivilegedWorks: withheld.length === 0, grantable, withheld, source };
}

/** The CapBnd line of a process status file, as numbers. */
async function boundingSetOf(pid: number, procRoot: string): Promise<Set<number> | undefined> {
  const status = await fsp.readFile(path.join(procRoot, String(pid), 'status'), 'utf8').catch(() => '');
  const m = /^CapBnd:\s*([0-9a-f]+)$/m.exec(status);
  return m ? capabilitiesInMask(m[1]) : undefined;
}

/** Inodes of the listening Unix sockets bound to `socketPath` (from /proc/net/unix). */
async function socketInodes(socketPath: string, procRoot: string): Promise<Set<string>> {
  const table = await fsp.readFile(path.join(procRoot, 'net', 'unix'), 'utf8').catch(() => '');
  const out = new Set<string>();
  for (const line of table.split('\n').slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path
    const f = line.trim().split(/\s+/);
    if (f.length >= 8 && f[7] === socketPath) out.add(f[6]);
  }
  return out;
}

/** The pid holding the listening socket at `socketPath`: the dockerd that serves it. */
export async function pidServingSocket(socketPath: string, procRoot = '/proc'): Promise<number | undefined> {
  const inodes = await socketInodes(path.resolve(socketPath), procRoot);
  if (inodes.size === 0) return undefined;
  const pids = (await fsp.readdir(procRoot).catch(() => [] as string[])).filter((d) => /^[0-9]+$/.test(d));
  for (const pid of pids) {
    const fdDir = path.join(procRoot, pid, 'fd');
    const fds = await fsp.readdir(fdDir).catch(() => [] as string[]);
    for (const fd of fds) {
      const target = await fsp.readlink(path.join(fdDir, fd)).catch(() => '');
      const m = /^socket:\[([0-9]+)\]$/.exec(target);
      if (m && inodes.has(m[1])) return Number(pid);
    }
  }
  return undefined;
}

/**
 * Reads the bounding set of the dockerd behind a local socket. A remote or
 * unidentifiable dockerd gives `undefined` (nothing known to restrict).
 */
export async function detectCapabilityGrant(
  apiVersion: string | undefined,
  socketPath: string | undefined,
  procRoot = '/proc',
): Promise<CapabilityGrant> {
  if (!socketPath) return computeCapabilityGrant(apiVersion, undefined, 'remote docker: bounding set unknown');
  const pid = await pidServingSocket(socketPath, procRoot);
  if (pid === undefined) return computeCapabilityGrant(apiVersion, undefined, `no process found serving ${socketPath}`);
  const bounding = await boundingSetOf(pid, procRoot);
  return computeCapabilityGrant(apiVersion, bounding, `CapBnd of dockerd pid ${pid}`);
}
