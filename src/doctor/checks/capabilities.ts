import type { Check } from '../types';

/** Linux capability numbers (include/uapi/linux/capability.h), for naming what is missing. */
const CAP_NAMES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'DAC_READ_SEARCH',
  'FOWNER',
  'FSETID',
  'KILL',
  'SETGID',
  'SETUID',
  'SETPCAP',
  'LINUX_IMMUTABLE',
  'NET_BIND_SERVICE',
  'NET_BROADCAST',
  'NET_ADMIN',
  'NET_RAW',
  'IPC_LOCK',
  'IPC_OWNER',
  'SYS_MODULE',
  'SYS_RAWIO',
  'SYS_CHROOT',
  'SYS_PTRACE',
  'SYS_PACCT',
  'SYS_ADMIN',
  'SYS_BOOT',
  'SYS_NICE',
  'SYS_RESOURCE',
  'SYS_TIME',
  'SYS_TTY_CONFIG',
  'MKNOD',
  'LEASE',
  'AUDIT_WRITE',
  'AUDIT_CONTROL',
  'SETFCAP',
  'MAC_OVERRIDE',
  'MAC_ADMIN',
  'SYSLOG',
  'WAKE_ALARM',
  'BLOCK_SUSPEND',
  'AUDIT_READ',
  'PERFMON',
  'BPF',
  'CHECKPOINT_RESTORE',
];

export function capName(n: number): string {
  return `CAP_${CAP_NAMES[n] ?? String(n)}`;
}

/** Capabilities 0..lastCap missing from a bounding set. */
export function missingCaps(capBnd: bigint, lastCap: number): number[] {
  const out: number[] = [];
  for (let n = 0; n <= lastCap; n++) if ((capBnd & (1n << BigInt(n))) === 0n) out.push(n);
  return out;
}

/**
 * Docker can only grant what its own bounding set holds; a privileged
 * container asks for every capability Docker knows, so one missing (as
 * CAP_SYS_RESOURCE in some VMs) fails them all with "unable to apply caps".
 */
export const capabilitiesCheck: Check = {
  name: 'capabilities',
  async run({ probes }) {
    const sets = await probes.dockerdCapBnd();
    if (sets.length === 0)
      return {
        name: this.name,
        status: 'warn',
        found: 'no local dockerd process found: its capabilities are not known',
        action: 'run doctor on the node where dockerd runs',
      };
    const last = await probes.lastCap();
    const missing = [...new Set(sets.flatMap((s) => missingCaps(s, last)))].sort((a, b) => a - b);
    if (missing.length === 0)
      return {
        name: this.name,
        status: 'ok',
        found: `dockerd holds every capability (0..${last}): privileged containers can get them all`,
      };
    return {
      name: this.name,
      status: 'warn',
      found: `dockerd lacks ${missing.map(capName).join(', ')}: privileged containers fail, containers asking for these fail`,
      action: 'run dockerd with the full capability bounding set (outside a restricted container or VM sandbox)',
    };
  },
};
