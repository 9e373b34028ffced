import { crashPointsFromEnv } from '../../src/crash-points';

describe('crash points', () => {
  it('kill only at the point CRISHIM_CRASH_AT names, and never without it', () => {
    const kills: string[] = [];
    const at = crashPointsFromEnv({ CRISHIM_CRASH_AT: 'sandbox:after-start' }, () => kills.push('killed'));
    at('sandbox:after-create');
    expect(kills).toEqual([]);
    at('sandbox:after-start');
    expect(kills).toEqual(['killed']);
    const none = crashPointsFromEnv({ CRISHIM_CRASH_AT: '' }, () => kills.push('killed'));
    none('sandbox:after-start');
    expect(kills).toHaveLength(1);
  });

  it('read the environment once: a later change does not count', () => {
    const env: NodeJS.ProcessEnv = {};
    let killed = false;
    const at = crashPointsFromEnv(env, () => (killed = true));
    env.CRISHIM_CRASH_AT = 'container:after-create';
    at('container:after-create');
    expect(killed).toBe(false);
  });
});
