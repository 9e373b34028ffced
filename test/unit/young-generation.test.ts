import { execFileSync } from 'child_process';
import { pinYoungGeneration } from '../../src/young-generation';

/** new_space size (MiB) in a fresh node after an allocation-heavy loop that keeps a lot alive, with `setup` run first. */
function youngGenerationAfterLoad(setup: string, nodeFlags: string[] = []): number {
  const script = `
    ${setup}
    let keep = [];
    for (let i = 0; i < 2e6; i++) { keep.push({ a: i, b: 'x' + i }); if (keep.length > 2e5) keep = []; }
    const s = require('v8').getHeapSpaceStatistics().find((x) => x.space_name === 'new_space');
    process.stdout.write(String(s.space_size / 1048576));
  `;
  return Number(execFileSync(process.execPath, [...nodeFlags, '-e', script], { encoding: 'utf8', env: {} }));
}

describe('young generation', () => {
  it('is pinned unless the operator sized the semi-spaces', () => {
    expect(pinYoungGeneration([], {})).toBe(true);
    expect(pinYoungGeneration(['--max-semi-space-size=8'], {})).toBe(false);
    expect(pinYoungGeneration([], { NODE_OPTIONS: '--inspect=0 --max_semi_space_size=4' })).toBe(false);
    expect(pinYoungGeneration(['--min-semi-space-size=2'], {})).toBe(false);
  });

  it('stays at its initial size when the growth factor is set after start, as main.ts does', () => {
    const grown = youngGenerationAfterLoad('');
    const pinned = youngGenerationAfterLoad("require('v8').setFlagsFromString('--semi-space-growth-factor=1');");
    // node's default lets it grow to 2 x 16 MiB under this load; pinned it is 2 x 1 MiB
    expect(grown).toBeGreaterThan(4);
    expect(pinned).toBeLessThanOrEqual(2);
  }, 60_000);
});
