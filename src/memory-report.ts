import { writeFileSync } from 'fs';

/** What one report holds, in bytes (process.memoryUsage, after a full GC when `gc` says so). */
export interface MemoryReport {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  /** A full GC ran first (node started with --expose-gc), so heapUsed is live data only. */
  gc: boolean;
  at: string;
}

/**
 * A measurement hook for the memory bench: with CRISHIM_MEMORY_REPORT=<file> in the
 * environment, SIGUSR2 makes the daemon write a MemoryReport (JSON) to that file. Heap used
 * is only comparable across samples after a full GC, which node allows only when started
 * with --expose-gc; without the flag the report says `gc: false`. Without the variable
 * nothing is installed (production), and SIGUSR2 keeps node's meaning (e.g.
 * --heapsnapshot-signal=SIGUSR2). Answers whether the hook was installed.
 */
export function installMemoryReport(
  env: NodeJS.ProcessEnv,
  signals: { on(signal: 'SIGUSR2', listener: () => void): unknown } = process,
): boolean {
  const file = env.CRISHIM_MEMORY_REPORT;
  if (!file) return false;
  signals.on('SIGUSR2', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (typeof gc === 'function') gc();
    const u = process.memoryUsage();
    const report: MemoryReport = {
      rss: u.rss,
      heapTotal: u.heapTotal,
      heapUsed: u.heapUsed,
      external: u.external,
      arrayBuffers: u.arrayBuffers,
      gc: typeof gc === 'function',
      at: new Date().toISOString(),
    };
    try {
      writeFileSync(file, JSON.stringify(report));
    } catch {
      /* the bench reads nothing and says so; the daemon carries on */
    }
  });
  return true;
}
