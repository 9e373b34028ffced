import { mkdirSync, mkdtempSync, writeFileSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { daemonCommand, executableArg, unitEnvironment } from '../../bench/daemon-command';

/** A checkout with just what daemonCommand reads: dist/main.js's first line and the packaged unit. */
function fakeRepo(shebang: string, unit: string): string {
  const repo = mkdtempSync(path.join(os.tmpdir(), 'bench-daemon-command-'));
  mkdirSync(path.join(repo, 'dist'));
  mkdirSync(path.join(repo, 'packaging', 'systemd'), { recursive: true });
  writeFileSync(path.join(repo, 'dist', 'main.js'), `${shebang}\nrequire('./daemon');\n`);
  writeFileSync(path.join(repo, 'packaging', 'systemd', 'crishim.service'), unit);
  return repo;
}

const UNIT =
  '[Service]\nType=notify\nEnvironment=NODE_OPTIONS=--v8-pool-size=1\nEnvironment=LANG=C\nExecStart=/usr/bin/crishim\n';

describe('the daemon the bench measures', () => {
  it('by default: dist/main.js under this node, its #! flags before the bench-given ones', () => {
    const repo = fakeRepo('#!/usr/bin/env -S node --v8-pool-size=1 --max-old-space-size=64', UNIT);
    const c = daemonCommand(repo, undefined, ['--expose-gc']);
    expect(c.command).toBe(process.execPath);
    expect(c.args).toEqual([
      '--v8-pool-size=1',
      '--max-old-space-size=64',
      '--expose-gc',
      path.join(repo, 'dist', 'main.js'),
    ]);
    expect(c.env.NODE_OPTIONS).toBe(process.env.NODE_OPTIONS);
    expect(c.label).toMatch(/^dist\/main\.js under node v\d+.* --v8-pool-size=1 --max-old-space-size=64$/);
  });

  it('a #! line without flags adds none', () => {
    const repo = fakeRepo('#!/usr/bin/env node', UNIT);
    expect(daemonCommand(repo, undefined, []).args).toEqual([path.join(repo, 'dist', 'main.js')]);
  });

  it("--executable: the program itself with the unit's environment, node flags in NODE_OPTIONS after the unit's", () => {
    const repo = fakeRepo('#!/usr/bin/env -S node --v8-pool-size=1', UNIT);
    const c = daemonCommand(repo, '/opt/crishim/crishim', ['--expose-gc']);
    expect(c.command).toBe('/opt/crishim/crishim');
    expect(c.args).toEqual([]);
    expect(c.env).toMatchObject({ NODE_OPTIONS: '--v8-pool-size=1 --expose-gc', LANG: 'C' });
    expect(c.label).toBe('the single executable /opt/crishim/crishim (NODE_OPTIONS=--v8-pool-size=1)');
  });

  it('reads --executable= as an absolute path, and its absence as dist/main.js', () => {
    expect(executableArg(['node', 'bench.js', '--executable=dist-pkg/build/crishim'])).toBe(
      path.resolve('dist-pkg/build/crishim'),
    );
    expect(executableArg(['node', 'bench.js', '--smoke'])).toBeUndefined();
  });

  it("takes a unit's Environment= lines only", () => {
    expect(unitEnvironment(UNIT)).toEqual({ NODE_OPTIONS: '--v8-pool-size=1', LANG: 'C' });
    expect(unitEnvironment('[Service]\nEnvironmentFile=/etc/default/crishim\n# Environment=A=1\n')).toEqual({});
  });
});
