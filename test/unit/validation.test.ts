import {
  checkCgroupParent,
  checkCpuset,
  checkId,
  checkName,
  checkResolvToken,
  checkSandboxMetadata,
  checkSysctls,
} from '../../src/cri/validation';
import { DomainError, type ErrorKind } from '../../src/errors';

function kindOf(fn: () => unknown): ErrorKind | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof DomainError ? err.kind : undefined;
  }
  return undefined;
}

describe('request validation', () => {
  it.each(['', 'a/b', '..', 'x..y', 'nul\u0000', 'x'.repeat(254)])('rejects name %j', (name) => {
    expect(kindOf(() => checkName('metadata.name', name))).toBe('invalid-argument');
  });

  it('accepts ordinary names and reports the field in the message', () => {
    expect(checkName('metadata.name', 'web-0')).toBe('web-0');
    expect(() => checkName('metadata.namespace', 'a/b')).toThrow(/metadata\.namespace/);
  });

  it('requires metadata with name, namespace and uid', () => {
    expect(kindOf(() => checkSandboxMetadata(null))).toBe('invalid-argument');
    expect(kindOf(() => checkSandboxMetadata({ name: 'a', namespace: 'b' }))).toBe('invalid-argument');
    expect(checkSandboxMetadata({ name: 'a', namespace: 'b', uid: 'c' })).toEqual({
      name: 'a',
      namespace: 'b',
      uid: 'c',
      attempt: 0,
    });
  });

  it('accepts hex ids and prefixes only', () => {
    expect(checkId('id', 'abc123')).toBe('abc123');
    expect(kindOf(() => checkId('id', ''))).toBe('invalid-argument');
    expect(kindOf(() => checkId('id', '../etc'))).toBe('invalid-argument');
    expect(kindOf(() => checkId('id', 'a'.repeat(65)))).toBe('invalid-argument');
  });
});

describe('hostile config values', () => {
  it.each(['0', '0-3', '0-3,5', '1,3,5-7', '12-12'])('accepts cpuset %j', (v) => {
    expect(checkCpuset('resources.cpuset_cpus', v)).toBe(v);
  });

  it.each(['0-', '-1', ',0', '0,', '0 1', '0\n1', 'a-b', '3-1', '0-3,5\u0000', '0;1'])(
    'rejects cpuset %j naming the field',
    (v) => {
      expect(kindOf(() => checkCpuset('resources.cpuset_mems', v))).toBe('invalid-argument');
      expect(() => checkCpuset('resources.cpuset_mems', v)).toThrow(/resources\.cpuset_mems/);
    },
  );

  it('accepts ordinary resolv.conf tokens and rejects whitespace and control characters', () => {
    for (const v of ['10.96.0.10', 'fd00::a', 'svc.cluster.local', 'ndots:5', 'edns0'])
      expect(checkResolvToken('dns', v)).toBe(v);
    for (const v of ['', 'a b', 'a\tb', 'a\nnameserver 1.1.1.1', 'a\u0000', 'a\rb', 'a\u007f']) {
      expect(kindOf(() => checkResolvToken('config.dns_config.servers[0]', v))).toBe('invalid-argument');
    }
    expect(() => checkResolvToken('config.dns_config.searches[2]', 'x y')).toThrow(/config\.dns_config\.searches\[2\]/);
  });

  it('rejects cgroup parents that climb out or carry NUL', () => {
    for (const v of ['', '/kubepods/burstable/pod1', 'kubepods.slice', '/a..b/c'])
      expect(checkCgroupParent('cg', v)).toBe(v);
    for (const v of ['..', '/kubepods/../../x', '../x', 'a/..', '/a\u0000b']) {
      expect(kindOf(() => checkCgroupParent('config.linux.cgroup_parent', v))).toBe('invalid-argument');
    }
    expect(() => checkCgroupParent('config.linux.cgroup_parent', '/a/../b')).toThrow(/config\.linux\.cgroup_parent/);
  });

  it('rejects sysctl names and values with a newline or NUL', () => {
    expect(checkSysctls('s', { 'net.core.somaxconn': '1024', 'kernel.sem': '250 32000 32 128' })).toEqual({
      'net.core.somaxconn': '1024',
      'kernel.sem': '250 32000 32 128',
    });
    const bad: Array<Record<string, string>> = [
      { 'a\nb': '1' },
      { a: '1\n' },
      { a: '1\u0000' },
      { 'a\u0000': '1' },
      { a: '\r' },
      { '': '1' },
    ];
    for (const m of bad) {
      expect(kindOf(() => checkSysctls('config.linux.sysctls', m))).toBe('invalid-argument');
    }
    expect(() => checkSysctls('config.linux.sysctls', { k: 'v\n' })).toThrow(/config\.linux\.sysctls\["k"\]/);
  });
});
