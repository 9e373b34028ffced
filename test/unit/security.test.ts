import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  apparmorSecurityOpt,
  appArmorProfileLoaded,
  loadSeccompProfile,
  resolveSeccomp,
  SECCOMP_PROFILE_MAX_BYTES,
  seccompSecurityOpt,
} from '../../src/cri/security';

describe('seccomp options', () => {
  it('is unconfined when nothing is asked, Docker default for RuntimeDefault', () => {
    expect(seccompSecurityOpt(null, '')).toEqual(['seccomp=unconfined']);
    expect(seccompSecurityOpt(null, 'runtime/default')).toEqual([]);
    expect(seccompSecurityOpt({ profile_type: 'RuntimeDefault', localhost_ref: '' }, 'unconfined')).toEqual([]);
    expect(seccompSecurityOpt({ profile_type: 'Unconfined', localhost_ref: '' }, '')).toEqual(['seccomp=unconfined']);
  });

  it('refuses unknown and relative profiles', () => {
    expect(() => seccompSecurityOpt(null, 'bogus')).toThrow(/unknown seccomp profile/);
  });

  it('refuses a relative Localhost path', async () => {
    await expect(loadSeccompProfile('rel.json')).rejects.toThrow(/absolute/);
  });
});

describe('apparmor options', () => {
  it('maps CRI profiles to Docker options', () => {
    expect(apparmorSecurityOpt(null, '')).toEqual([]);
    expect(apparmorSecurityOpt({ profile_type: 'Unconfined', localhost_ref: '' }, '')).toEqual(['apparmor=unconfined']);
    expect(
      apparmorSecurityOpt(
        { profile_type: 'Localhost', localhost_ref: 'localhost/my-prof' },
        '',
        () => true,
        () => true,
      ),
    ).toEqual(['apparmor=my-prof']);
  });

  it('refuses a Localhost profile that is not loaded, and leaves an unknown list to runc', () => {
    const loaded = (names: string[] | undefined) => (n: string) => names?.includes(n);
    const ask = (names: string[] | undefined, ref: string) => () =>
      apparmorSecurityOpt({ profile_type: 'Localhost', localhost_ref: ref }, '', () => true, loaded(names));
    expect(ask(['other'], 'localhost/my-prof')).toThrow(/"my-prof" is not loaded on this host.*apparmor_parser/);
    expect(() => apparmorSecurityOpt(null, 'localhost/my-prof', () => true, loaded([]))).toThrow(/not loaded/);
    expect(ask(['my-prof'], 'localhost/my-prof')()).toEqual(['apparmor=my-prof']);
    expect(ask(undefined, 'localhost/my-prof')()).toEqual(['apparmor=my-prof']);
  });

  it("reads securityfs' profile list by whole names", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crishim-apparmor-'));
    const list = path.join(dir, 'profiles');
    fs.writeFileSync(list, 'docker-default (enforce)\nmy-prof-2 (complain)\n/usr/bin/man (enforce)\n');
    expect(appArmorProfileLoaded('docker-default', list)).toBe(true);
    expect(appArmorProfileLoaded('my-prof-2', list)).toBe(true);
    expect(appArmorProfileLoaded('/usr/bin/man', list)).toBe(true);
    expect(appArmorProfileLoaded('my-prof', list)).toBe(false);
    expect(appArmorProfileLoaded('docker', list)).toBe(false);
    expect(appArmorProfileLoaded('x', path.join(dir, 'absent'))).toBeUndefined();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a Localhost profile where AppArmor is off instead of running unconfined', () => {
    expect(() =>
      apparmorSecurityOpt({ profile_type: 'Localhost', localhost_ref: 'localhost/my-prof' }, '', () => false),
    ).toThrow(/AppArmor is not enabled/);
    expect(() => apparmorSecurityOpt(null, 'localhost/my-prof', () => false)).toThrow(/AppArmor is not enabled/);
    expect(apparmorSecurityOpt({ profile_type: 'Unconfined', localhost_ref: '' }, '', () => false)).toEqual([
      'apparmor=unconfined',
    ]);
  });
});

describe('Localhost seccomp profiles', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crishim-seccomp-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string): string => {
    const f = path.join(dir, name);
    fs.writeFileSync(f, text);
    return f;
  };

  it('loads a real profile and passes it to Docker compacted', async () => {
    const f = write(
      'ok.json',
      JSON.stringify(
        { defaultAction: 'SCMP_ACT_ERRNO', syscalls: [{ names: ['read'], action: 'SCMP_ACT_ALLOW' }] },
        null,
        2,
      ),
    );
    expect(await resolveSeccomp({ profile_type: 'Localhost', localhost_ref: f }, '')).toEqual([
      'seccomp={"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}',
    ]);
  });

  it('refuses a FIFO at once, without waiting for a writer', async () => {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(loadSeccompProfile(fifo)).rejects.toThrow(/not a regular file/);
  });

  it('refuses character devices and oversized files', async () => {
    await expect(loadSeccompProfile('/dev/zero')).rejects.toThrow(/not a regular file/);
    const big = write('big.json', `{"defaultAction":"SCMP_ACT_ALLOW","x":"${'a'.repeat(SECCOMP_PROFILE_MAX_BYTES)}"}`);
    await expect(loadSeccompProfile(big)).rejects.toThrow(/larger than/);
  });

  it('never quotes the file content in the error', async () => {
    const secret = write('shadow', 'root:*:20234:0:99999:7:::\n');
    const err = await loadSeccompProfile(secret).catch((e: Error) => e);
    expect((err as Error).message).toMatch(/not valid JSON/);
    expect((err as Error).message).not.toContain('root:');
  });

  it('refuses JSON that is not a seccomp profile', async () => {
    for (const [name, text] of [
      ['arr.json', '[1,2]'],
      ['noaction.json', '{"name":"x"}'],
      ['badaction.json', '{"defaultAction":"ALLOW"}'],
      ['badsys.json', '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"action":"SCMP_ACT_ERRNO"}]}'],
    ]) {
      await expect(loadSeccompProfile(write(name, text))).rejects.toThrow(/is not a seccomp profile/);
    }
  });

  it('requires the profile to be loaded before building options', () => {
    expect(() => seccompSecurityOpt({ profile_type: 'Localhost', localhost_ref: '/x.json' }, '')).toThrow(
      /before it was loaded/,
    );
  });
});
