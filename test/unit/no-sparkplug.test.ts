import { spawnSync } from 'child_process';
import { skipSparkplug } from '../../src/no-sparkplug';

describe('no Sparkplug', () => {
  it('is set unless the operator named the flag in node’s flags or NODE_OPTIONS', () => {
    const set: string[] = [];
    const push = (f: string): number => set.push(f);
    expect(skipSparkplug([], {}, push)).toBe(true);
    expect(skipSparkplug(['--inspect=0'], { NODE_OPTIONS: '--max-old-space-size=64' }, push)).toBe(true);
    expect(skipSparkplug(['--sparkplug'], {}, push)).toBe(false);
    expect(skipSparkplug([], { NODE_OPTIONS: '--v8-pool-size=1 --no-sparkplug' }, push)).toBe(false);
    expect(set).toEqual(['--no-sparkplug', '--no-sparkplug']);
  });

  it('set after start, it keeps warm functions from growing the code space', () => {
    // 3,000 distinct functions, each called often enough to be baseline-compiled but not optimized
    const codeKiB = (setFirst: string): number => {
      const script = `${setFirst}
        const fns = [];
        for (let i = 0; i < 3000; i++) fns.push(new Function('a', 'let s = ' + i + '; for (let j = 0; j < a; j++) s += j % 7; return s;'));
        for (let k = 0; k < 20; k++) for (const f of fns) f(50);
        const cs = require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'code_space');
        process.stdout.write(String(Math.round(cs.space_used_size / 1024)));`;
      const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      return Number(r.stdout);
    };
    const withSparkplug = codeKiB('');
    const without = codeKiB(`require('v8').setFlagsFromString('--no-sparkplug');`);
    expect(without).toBeGreaterThan(0);
    expect(without).toBeLessThan(withSparkplug / 2);
  });
});
