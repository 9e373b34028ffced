import { readTextOnce } from './files';

export interface InterfaceUsage {
  name: string;
  rxBytes: number;
  rxErrors: number;
  txBytes: number;
  txErrors: number;
}

/**
 * Parses /proc/<pid>/net/dev, which shows the network namespace of that
 * process: for a pod's pause process, the pod's interfaces (no nsenter needed).
 * Loopback is left out, as the kubelet does.
 */
export function parseNetDev(text: string): InterfaceUsage[] {
  const out: InterfaceUsage[] = [];
  for (const line of text.split('\n').slice(2)) {
    const m = /^\s*([^:]+):\s*(.*)$/.exec(line);
    if (!m || m[1] === 'lo') continue;
    const f = m[2].trim().split(/\s+/).map(Number);
    // receive: bytes packets errs ...; transmit starts at field 8
    out.push({ name: m[1], rxBytes: f[0], rxErrors: f[2], txBytes: f[8], txErrors: f[10] });
  }
  return out;
}

export function readNetDev(pid: number, proc = '/proc'): InterfaceUsage[] | undefined {
  const text = readTextOnce(`${proc}/${pid}/net/dev`);
  return text === undefined ? undefined : parseNetDev(text);
}
