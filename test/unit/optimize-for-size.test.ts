import { spawnSync } from 'child_process';
import { optimizeForSize } from '../../src/optimize-for-size';

describe('optimize for size', () => {
  it('is set unless the operator named the flag in node’s flags or NODE_OPTIONS', () => {
    const set: string[] = [];
    const push = (f: string): number => set.push(f);
    expect(optimizeForSize([], {}, push)).toBe(true);
    expect(optimizeForSize(['--inspect=0'], { NODE_OPTIONS: '--max-old-space-size=64' }, push)).toBe(true);
    expect(optimizeForSize(['--no-optimize-for-size'], {}, push)).toBe(false);
    expect(optimizeForSize(['--optimize_for_size'], {}, push)).toBe(false);
    expect(optimizeForSize([], { NODE_OPTIONS: '--v8-pool-size=1 --no-optimize-for-size' }, push)).toBe(false);
    expect(set).toEqual(['--optimize-for-size', '--optimize-for-size']);
  });

  it('node knows the flag when set after start (an unknown one is refused on stderr)', () => {
    const stderrOf = (flag: string): string =>
      spawnSync(process.execPath, ['-e', `require('v8').setFlagsFromString('${flag}')`], { encoding: 'utf8' }).stderr;
    expect(stderrOf('--optimize-for-sizzle')).toMatch(/unrecognized flag/);
    expect(stderrOf('--optimize-for-size')).toBe('');
  });
});
