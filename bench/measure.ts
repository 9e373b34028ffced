/** What several bench sections measure of a process or a sample, written once. */
import { readdirSync, readFileSync } from 'fs';

/** The p-th percentile of a sample (nearest rank); NaN for an empty one. */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** CPU time of a process's live threads in ns (schedstat): fine enough for one call's cost. */
export function cpuNs(pid: number): number {
  let sum = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* thread ended */
    }
  }
  return sum;
}

/** CPU time of a process's main thread in ns (its task has the process's id): the event loop alone, without V8's and libuv's helper threads. */
export function mainThreadCpuNs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
}

/** CPU ms of each of a series of calls: the whole process's, and its main thread's. */
export interface CallCpu {
  all: number[];
  main: number[];
}

/**
 * `n` calls made one at a time, `gapMs` apart, with the CPU each took. Both counts, because they
 * answer different questions: the main thread is the call's own work (reads, conversion,
 * encoding); the whole process adds what V8's helper thread did meanwhile (concurrent marking,
 * compiles), some of it for the call (its garbage, its path's first optimizations), some of it,
 * after a busy spell, catching up on that spell.
 */
export async function spacedCallCpu(
  pid: number,
  call: () => Promise<unknown>,
  n: number,
  gapMs: number,
): Promise<CallCpu> {
  const out: CallCpu = { all: [], main: [] };
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, gapMs));
    const all0 = cpuNs(pid);
    const main0 = mainThreadCpuNs(pid);
    await call();
    out.main.push((mainThreadCpuNs(pid) - main0) / 1e6);
    out.all.push((cpuNs(pid) - all0) / 1e6);
  }
  return out;
}

/**
 * Waits until a process has used less than `busyPct` % of a core over a whole second, or `maxMs`
 * went by. After pods were made or a load ran, V8 goes on marking and compiling for that work for
 * seconds: a call timed in that spell is charged with it.
 */
export async function waitQuiet(pid: number, busyPct = 2, maxMs = 30_000): Promise<void> {
  const t0 = Date.now();
  let before = cpuNs(pid);
  while (Date.now() - t0 < maxMs) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = cpuNs(pid);
    if ((now - before) / 1e7 < busyPct) break;
    before = now;
  }
}

/** utime + stime of a process in ms, all its threads, dead ones included (/proc/<pid>/stat, 10 ms ticks): for CPU over a whole phase. */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields 14 and 15 of stat, counted from the state field (3)
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

/** CPU ms the whole machine has spent busy (all but idle and iowait) since boot, from /proc/stat. */
export function machineBusyMs(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const busy = f.reduce((a, b) => a + b, 0) - f[3] - f[4];
  return (busy * 1000) / 100;
}

/** The shared dockerd's pid (DOCKERD_PIDFILE names another engine's pidfile). */
export const dockerdPid = (): number =>
  Number(readFileSync(process.env.DOCKERD_PIDFILE ?? '/var/run/docker.pid', 'utf8').trim());

/** File descriptors a process holds open (sockets, files, pipes). */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** Resident set size of a process in MiB. */
export function rssMiB(pid: number): number {
  return statusKiB(pid, 'VmRSS') / 1024;
}

/**
 * A process's resident memory in MiB, and its anonymous part: what the process alone costs
 * the node. The rest is file pages (its executable's code, shared with every process running
 * that file, and page cache).
 */
export interface Resident {
  rssMiB: number;
  anonMiB: number;
}

export function resident(pid: number): Resident {
  return { rssMiB: rssMiB(pid), anonMiB: statusKiB(pid, 'RssAnon') / 1024 };
}

export const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** `78.0 / 83.1 MiB`: the mean and the highest of RSS samples taken during a load. */
export function rssSpread(samples: number[]): string {
  return samples.length ? `${mean(samples).toFixed(1)} / ${Math.max(...samples).toFixed(1)} MiB` : '-';
}

/** The means of four consecutive quarters of `xs` (fewer than four samples: none), to show a drift. */
export function quarterMeans(xs: number[]): number[] {
  if (xs.length < 4) return [];
  return [0, 1, 2, 3].map((q) =>
    mean(xs.slice(Math.floor((q * xs.length) / 4), Math.floor(((q + 1) * xs.length) / 4))),
  );
}

/** `81.5 MiB (anon 36.0)` */
export function residentCell(r: Resident): string {
  return `${r.rssMiB.toFixed(1)} MiB (anon ${r.anonMiB.toFixed(1)})`;
}

function statusKiB(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? NaN);
}
