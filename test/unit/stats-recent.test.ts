import { createRecentSamples } from '../../src/stats/recent';
import type { Sample } from '../../src/stats/sample';

const sample = (id: string, mem: number): Sample => ({ id, timestamp: '1', usage: { memoryUsage: mem } });

describe('recent samples', () => {
  it('reuses a sample for the same target state within the window only', () => {
    let now = 1000;
    const r = createRecentSamples(500, () => now);
    r.put({ id: 'a', running: true }, sample('a', 1));
    expect(r.get({ id: 'a', running: true })?.usage.memoryUsage).toBe(1);
    // stopped since: read again
    expect(r.get({ id: 'a', running: false })).toBeUndefined();
    now += 499;
    expect(r.get({ id: 'a', running: true })).toBeDefined();
    now += 1;
    expect(r.get({ id: 'a', running: true })).toBeUndefined();
  });

  it('keeps nothing with a zero window, and forgets what is not kept', () => {
    const none = createRecentSamples(0);
    none.put({ id: 'a', running: true }, sample('a', 1));
    expect(none.get({ id: 'a', running: true })).toBeUndefined();
    const r = createRecentSamples(10_000);
    r.put({ id: 'a', running: true }, sample('a', 1));
    r.put({ id: 'b', running: true }, sample('b', 2));
    r.forget((id) => id === 'b');
    expect(r.get({ id: 'a', running: true })).toBeUndefined();
    expect(r.get({ id: 'b', running: true })).toBeDefined();
  });

  it('drops samples once past their window, without waiting for the next round', () => {
    jest.useFakeTimers();
    try {
      const r = createRecentSamples(500);
      r.put({ id: 'a', running: true }, sample('a', 1));
      jest.advanceTimersByTime(300);
      r.put({ id: 'b', running: true }, sample('b', 2));
      jest.advanceTimersByTime(199);
      expect(r.held()).toBe(2);
      jest.advanceTimersByTime(1);
      // a's window is over; b's is not
      expect(r.held()).toBe(1);
      expect(r.get({ id: 'b', running: true })).toBeDefined();
      jest.advanceTimersByTime(500);
      expect(r.held()).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
