import { EventEmitter } from 'events';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { installMemoryReport, type MemoryReport } from '../../src/memory-report';

describe('memory report hook', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crishim-memreport-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is not installed without CRISHIM_MEMORY_REPORT', () => {
    const signals = new EventEmitter();
    expect(installMemoryReport({}, signals)).toBe(false);
    expect(signals.listenerCount('SIGUSR2')).toBe(0);
  });

  it('writes process.memoryUsage() on SIGUSR2, saying whether a GC ran first', () => {
    const file = path.join(dir, 'report.json');
    const signals = new EventEmitter();
    expect(installMemoryReport({ CRISHIM_MEMORY_REPORT: file }, signals)).toBe(true);
    signals.emit('SIGUSR2');
    const text = readFileSync(file, 'utf8');
    const r = JSON.parse(text) as MemoryReport;
    expect(r.rss).toBeGreaterThan(r.heapUsed);
    expect(r.heapUsed).toBeGreaterThan(0);
    // jest runs without --expose-gc
    expect(r.gc).toBe(typeof (globalThis as { gc?: unknown }).gc === 'function');
  });
});
