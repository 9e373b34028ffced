import { closeHeld, readHeld } from './files';

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
 * Loopback is left out, as the kubelet does. A cursor walk, not split and regex:
 * it runs for every pod at every stats call, and the pieces were most of its garbage.
 */
export function parseNetDev(text: string): InterfaceUsage[] {
  const out: InterfaceUsage[] = [];
  // past the two header lines
  let line = text.indexOf('\n', text.indexOf('\n') + 1) + 1;
  while (line > 0 && line < text.length) {
    const eol = text.indexOf('\n', line);
    const end = eol < 0 ? text.length : eol;
    const colon = text.indexOf(':', line);
    if (colon > 0 && colon < end) {
      const name = text.slice(line, colon).trim();
      // receive: bytes packets errs ...; transmit starts at field 8
      if (name !== '' && name !== 'lo' && countersAt(text, colon + 1, end) >= 11) {
        out.push({ name, rxBytes: counters[0], rxErrors: counters[2], txBytes: counters[8], txErrors: counters[10] });
      }
    }
    line = end + 1;
  }
  return out;
}

const counters: number[] = new Array<number>(16).fill(0);
/** Reads up to 16 blank-separated counters from `at` to `end` into `counters`; answers how many. */
function countersAt(text: string, at: number, end: number): number {
  let n = 0;
  let p = at;
  while (n < counters.length) {
    while (p < end && (text.charCodeAt(p) === 32 || text.charCodeAt(p) === 9)) p++;
    const start = p;
    let v = 0;
    for (let c = text.charCodeAt(p); p < end && c >= 48 && c <= 57; c = text.charCodeAt(++p)) v = v * 10 + (c - 48);
    if (p === start) break;
    counters[n++] = v;
  }
  return n;
}

/**
 * A pod's interfaces, through an fd kept open from one stats call to the next: opening
 * /proc/<pid>/net/dev costs the kernel a namespace lookup, several times a read (measured:
 * ~10 us against ~2 us, 110 pods a call). The open fd holds the pod's network namespace,
 * so it is closed as soon as the pod is done with: when crishim stops the sandbox
 * (releaseNetDev), when a stats call finds its pause container no longer running (the
 * collector), and in any case within two minutes of its last read (files.ts).
 */
export function readNetDev(pid: number, proc = '/proc'): InterfaceUsage[] | undefined {
  const text = readHeld(netDevFile(pid, proc));
  return text === undefined ? undefined : parseNetDev(text);
}

/** Lets go of a pause process's network namespace (see readNetDev). */
export function releaseNetDev(pid: number, proc = '/proc'): void {
  closeHeld(netDevFile(pid, proc));
}

const netDevFile = (pid: number, proc: string): string => `${proc}/${pid}/net/dev`;
