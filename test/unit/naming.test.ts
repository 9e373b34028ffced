import { containerName, parseName, sandboxName, withRandomSuffix } from '../../src/cri/naming';
import { makeLabels, matchesSelector, splitLabels, TYPE_LABEL } from '../../src/labels';

describe('dockershim names', () => {
  const pod = { name: 'web', namespace: 'default', uid: 'u-1', attempt: 2 };

  it('encodes sandboxes and containers the dockershim way', () => {
    expect(sandboxName(pod)).toBe('k8s_POD_web_default_u-1_2');
    expect(containerName('nginx', 3, pod)).toBe('k8s_nginx_web_default_u-1_3');
  });

  it('parses both kinds back, with or without the leading slash and random suffix', () => {
    expect(parseName('/k8s_POD_web_default_u-1_2')).toEqual({ kind: 'sandbox', container: 'POD', pod });
    expect(parseName(withRandomSuffix('k8s_nginx_web_default_u-1_2'))).toEqual({
      kind: 'container',
      container: 'nginx',
      pod,
    });
  });

  it('rejects names that are not ours', () => {
    expect(parseName('/happy_turing')).toBeUndefined();
    expect(parseName('k8s_POD_web_default_u-1_x')).toBeUndefined();
    expect(parseName('k8s_a_b')).toBeUndefined();
  });
});

describe('labels', () => {
  it('round-trips CRI labels and annotations through Docker labels, hiding internal keys', () => {
    const docker = makeLabels({ app: 'web' }, { 'kubernetes.io/config.source': 'api' }, { [TYPE_LABEL]: 'podsandbox' });
    expect(docker).toEqual({ app: 'web', 'annotation.kubernetes.io/config.source': 'api', [TYPE_LABEL]: 'podsandbox' });
    expect(splitLabels(docker)).toEqual({
      labels: { app: 'web' },
      annotations: { 'kubernetes.io/config.source': 'api' },
    });
  });

  it('internal keys win over user labels of the same name', () => {
    expect(makeLabels({ [TYPE_LABEL]: 'evil' }, {}, { [TYPE_LABEL]: 'container' })[TYPE_LABEL]).toBe('container');
  });

  it('matches selectors as a subset', () => {
    expect(matchesSelector({ a: '1', b: '2' }, { a: '1' })).toBe(true);
    expect(matchesSelector({ a: '1' }, { a: '2' })).toBe(false);
    expect(matchesSelector({ a: '1' }, { c: '1' })).toBe(false);
    expect(matchesSelector({}, undefined)).toBe(true);
  });
});

describe('identity labels', () => {
  it('adds pod identity labels the client did not send, and hides only those', () => {
    const docker = makeLabels(
      { app: 'x', 'io.kubernetes.pod.name': 'from-kubelet' },
      {},
      {},
      { 'io.kubernetes.pod.name': 'web', 'io.kubernetes.pod.uid': 'u1' },
    );
    expect(docker['io.kubernetes.pod.name']).toBe('from-kubelet');
    expect(docker['io.kubernetes.pod.uid']).toBe('u1');
    expect(splitLabels(docker).labels).toEqual({ app: 'x', 'io.kubernetes.pod.name': 'from-kubelet' });
  });
});
