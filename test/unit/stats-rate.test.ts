import { createRateTracker, nanoCores } from '../../src/stats/rate';

const S = 1_000_000_000n;

describe('CPU rate', () => {
  it('one busy core over a second is 1e9 nanocores; half a core over two seconds is 5e8', () => {
    expect(nanoCores({ at: 0n, cpuNanos: 0n }, { at: S, cpuNanos: S })).toBe(1e9);
    expect(nanoCores({ at: 10n * S, cpuNanos: 7n * S }, { at: 12n * S, cpuNanos: 8n * S })).toBe(5e8);
  });
  it('no rate when no time passed or the counter went backwards (restart)', () => {
    expect(nanoCores({ at: S, cpuNanos: 5n }, { at: S, cpuNanos: 9n })).toBeUndefined();
    expect(nanoCores({ at: 0n, cpuNanos: 5n * S }, { at: S, cpuNanos: S })).toBeUndefined();
  });
  it('the tracker yields nothing on first sight, then the rate since the previous reading', () => {
    const t = createRateTracker(0n);
    expect(t.observe('a', { at: 0n, cpuNanos: 0n })).toBeUndefined();
    expect(t.has('a')).toBe(true);
    expect(t.observe('a', { at: S, cpuNanos: S / 4n })).toBe(2.5e8);
    expect(t.observe('a', { at: 2n * S, cpuNanos: S / 4n })).toBe(0);
    expect(t.observe('b', { at: 2n * S, cpuNanos: 0n })).toBeUndefined();
  });
  it('readings closer than the minimum interval keep the previous rate and window', () => {
    const t = createRateTracker(S / 10n);
    t.observe('a', { at: 0n, cpuNanos: 0n });
    expect(t.observe('a', { at: S, cpuNanos: S })).toBe(1e9);
    expect(t.observe('a', { at: S + 1000n, cpuNanos: S + 1000n })).toBe(1e9);
    // the window still starts at the reading taken at 1 s
    expect(t.observe('a', { at: 2n * S, cpuNanos: S + S / 2n })).toBe(5e8);
  });
  it('prune forgets keys', () => {
    const t = createRateTracker();
    t.observe('a', { at: 0n, cpuNanos: 0n });
    t.observe('pod:b', { at: 0n, cpuNanos: 0n });
    t.prune((k) => k.startsWith('pod:'));
    expect(t.has('a')).toBe(false);
    expect(t.has('pod:b')).toBe(true);
  });
});
