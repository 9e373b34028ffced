import { checkRequestLabels, makeLabels, splitLabels } from '../../src/labels';
import { DomainError } from '../../src/errors';

const identity = {
  'io.kubernetes.pod.name': 'web',
  'io.kubernetes.pod.namespace': 'default',
  'io.kubernetes.pod.uid': 'u1',
};

function refusal(labels: Record<string, string>): DomainError | undefined {
  try {
    checkRequestLabels('config.labels', labels, identity);
  } catch (err) {
    return err as DomainError;
  }
  return undefined;
}

describe('request labels never collide with crishim’s own', () => {
  it.each([
    ['io.kubernetes.container.logpath', '/etc/passwd'],
    ['io.kubernetes.docker.type', 'container'],
    ['io.kubernetes.sandbox.id', 'abc'],
    ['io.crishim.implicit-labels', 'team'],
    ['io.crishim.hugepage-limits', '[]'],
    ['annotation.x', 'y'],
    ['io.kubernetes.pod.namespace', 'kube-system'],
    ['io.kubernetes.pod.name', 'kube-apiserver'],
  ])('refuses %s=%s, naming the key', (k, v) => {
    const err = refusal({ team: 'a', [k]: v });
    expect(err?.kind).toBe('invalid-argument');
    expect(err?.message).toContain(k);
  });

  it('accepts the identity labels the kubelet sends, with the metadata’s values, and ordinary labels', () => {
    expect(refusal({ ...identity, team: 'a', 'app.kubernetes.io/name': 'web' })).toBeUndefined();
  });

  it('round-trips ordinary labels and annotations', () => {
    const labels = makeLabels({ team: 'a' }, { 'annotation.x': 'y' }, { 'io.crishim.attempt': '0' }, identity);
    expect(splitLabels(labels)).toEqual({ labels: { team: 'a' }, annotations: { 'annotation.x': 'y' } });
  });
});
