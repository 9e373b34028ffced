import { closeHeld, readHeldWith } from './files';

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
 * Loopback is left out, as the kubelet does. A cursor walk over the file's bytes
 * (the first `len`; a shared read buffer holds older bytes past them), not split and
 * regex, nor even a string of the text: it runs for every pod at every stats call,
 * and the pieces were most of its garbage.
 */
export function parseNetDev(b: Buffer, len = b.length): InterfaceUsage[] {
  const out: InterfaceUsage[] = [];
  // past the two header lines
  let line = lineAfter(b, lineAfter(b, 0, len), len);
  while (line < len) {
    const end = lineEnd(b, line, len);
    const colon = b.indexOf(COLON, line);
    if (colon > 0 && colon < end) {
      const name = nameBetween(b, line, colon);
      // receive: bytes packets errs ...; transmit starts at field 8
      if (name !== '' && name !== 'lo' && countersAt(b, colon + 1, end) >= 11) {
        out.push({ name, rxBytes: counters[0], rxErrors: counters[2], txBytes: counters[8], txErrors: counters[10] });
      }
    }
    line = end + 1;
  }
  return out;
}

const COLON = 58;
const NEWLINE = 10;
const isBlank = (c: number): boolean => c === 32 || c === 9;

/** Where the line holding `from` ends: its newline, or `len`. */
function lineEnd(b: Buffer, from: number, len: number): number {
  const eol = b.indexOf(NEWLINE, from);
  return eol < 0 || eol > len ? len : eol;
}

const lineAfter = (b: Buffer, from: number, len: number): number => Math.min(len, lineEnd(b, from, len) + 1);

/** The interface name before its colon, blanks trimmed (names are ASCII). */
function nameBetween(b: Buffer, from: number, colon: number): string {
  let s = from;
  let e = colon;
  while (s < e && isBlank(b[s])) s++;
  while (e > s && isBlank(b[e - 1])) e--;
  return b.toString('latin1', s, e);
}

const counters: number[] = new Array<number>(16).fill(0);
/** Reads up to 16 blank-separated counters from `at` to `end` into `counters`; answers how many. */
function countersAt(b: Buffer, at: number, end: number): number {
  let n = 0;
  let p = at;
  while (n < counters.length) {
    while (p < end && isBlank(b[p])) p++;
    const start = p;
    let v = 0;
    for (; p < end && b[p] >= 48 && b[p] <= 57; p++) v = v * 10 + (b[p] - 48);
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
  return readHeldWith(netDevFile(pid, proc), parseNetDev);
}

/** Lets go of a pause process's network namespace (see readNetDev). */
export function releaseNetDev(pid: number, proc = '/proc'): void {
  closeHeld(netDevFile(pid, proc));
}

const netDevFile = (pid: number, proc: string): string => `${proc}/${pid}/net/dev`;
