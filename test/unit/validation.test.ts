import { status } from '@grpc/grpc-js';
import { checkId, checkName, checkSandboxMetadata } from '../../src/cri/validation';
import { CriError } from '../../src/server/errors';

function codeOf(fn: () => unknown): status | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof CriError ? err.code : undefined;
  }
  return undefined;
}

describe('request validation', () => {
  it.each(['', 'a/b', '..', 'x..y', 'nul\u0000', 'x'.repeat(254)])('rejects name %j', (name) => {
    expect(codeOf(() => checkName('metadata.name', name))).toBe(status.INVALID_ARGUMENT);
  });

  it('accepts ordinary names and reports the field in the message', () => {
    expect(checkName('metadata.name', 'web-0')).toBe('web-0');
    expect(() => checkName('metadata.namespace', 'a/b')).toThrow(/metadata\.namespace/);
  });

  it('requires metadata with name, namespace and uid', () => {
    expect(codeOf(() => checkSandboxMetadata(null))).toBe(status.INVALID_ARGUMENT);
    expect(codeOf(() => checkSandboxMetadata({ name: 'a', namespace: 'b' }))).toBe(status.INVALID_ARGUMENT);
    expect(checkSandboxMetadata({ name: 'a', namespace: 'b', uid: 'c' })).toEqual({ name: 'a', namespace: 'b', uid: 'c', attempt: 0 });
  });

  it('accepts hex ids and prefixes only', () => {
    expect(checkId('id', 'abc123')).toBe('abc123');
    expect(codeOf(() => checkId('id', ''))).toBe(status.INVALID_ARGUMENT);
    expect(codeOf(() => checkId('id', '../etc'))).toBe(status.INVALID_ARGUMENT);
    expect(codeOf(() => checkId('id', 'a'.repeat(65)))).toBe(status.INVALID_ARGUMENT);
  });
});
