import { apparmorSecurityOpt, seccompSecurityOpt } from '../../src/cri/security';

describe('seccomp options', () => {
  it('is unconfined when nothing is asked, Docker default for RuntimeDefault', () => {
    expect(seccompSecurityOpt(null, '')).toEqual(['seccomp=unconfined']);
    expect(seccompSecurityOpt(null, 'runtime/default')).toEqual([]);
    expect(seccompSecurityOpt({ profile_type: 'RuntimeDefault', localhost_ref: '' }, 'unconfined')).toEqual([]);
    expect(seccompSecurityOpt({ profile_type: 'Unconfined', localhost_ref: '' }, '')).toEqual(['seccomp=unconfined']);
  });

  it('refuses unknown and relative profiles', () => {
    expect(() => seccompSecurityOpt(null, 'bogus')).toThrow(/unknown seccomp profile/);
    expect(() => seccompSecurityOpt({ profile_type: 'Localhost', localhost_ref: 'rel.json' }, '')).toThrow(/absolute/);
  });
});

describe('apparmor options', () => {
  it('maps CRI profiles to Docker options', () => {
    expect(apparmorSecurityOpt(null, '')).toEqual([]);
    expect(apparmorSecurityOpt({ profile_type: 'Unconfined', localhost_ref: '' }, '')).toEqual(['apparmor=unconfined']);
    expect(apparmorSecurityOpt({ profile_type: 'Localhost', localhost_ref: 'localhost/my-prof' }, '')).toEqual(['apparmor=my-prof']);
  });
});
