import {
  canonicalRef,
  familiarRef,
  isImageRef,
  normalizeRef,
  parseRef,
  pullError,
  pullErrorKind,
  registryHost,
  registryMessage,
} from '../../src/docker/images';
import { DomainError } from '../../src/errors';

const DIGEST = 'sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf';

describe('image references', () => {
  it.each([
    'busybox',
    'busybox:1.36',
    'registry.k8s.io/pause:3.10',
    '127.0.0.1:5000/crishim/test:v1',
    'localhost/app',
    `gcr.io/k8s-staging-cri-tools/test-image-digest@${DIGEST}`,
    `busybox:1.36@${DIGEST}`,
    DIGEST,
    '9700f9a2f5bf',
    'Registry.Example.com/app:V1',
  ])('accepts %s', (ref) => expect(isImageRef(ref)).toBe(true));

  it.each([
    '',
    'Upper',
    'a/UPPER',
    '../../etc/passwd',
    'a b',
    'ü∂ƒ',
    'x:y:z',
    '/abs',
    'a//b',
    'busybox@sha256:short',
    'x'.repeat(5000),
  ])('rejects %j', (ref) => expect(isImageRef(ref)).toBe(false));

  it('parses like Docker (host only with . : localhost or upper case)', () => {
    expect(parseRef('busybox')).toEqual({
      domain: 'docker.io',
      path: 'library/busybox',
      tag: undefined,
      digest: undefined,
    });
    expect(parseRef('user/app:1')).toMatchObject({ domain: 'docker.io', path: 'user/app', tag: '1' });
    expect(parseRef('localhost/app')).toMatchObject({ domain: 'localhost', path: 'app' });
    expect(parseRef('127.0.0.1:5000/a/b:v1')).toMatchObject({ domain: '127.0.0.1:5000', path: 'a/b', tag: 'v1' });
    expect(parseRef('index.docker.io/busybox')).toMatchObject({ domain: 'docker.io', path: 'library/busybox' });
    expect(parseRef(`r.io/a@${DIGEST}`)).toMatchObject({ domain: 'r.io', path: 'a', tag: undefined, digest: DIGEST });
  });

  it('normalizes like docker pull', () => {
    expect(normalizeRef('busybox')).toBe('busybox:latest');
    expect(normalizeRef('127.0.0.1:5000/a/b')).toBe('127.0.0.1:5000/a/b:latest');
    expect(normalizeRef('127.0.0.1:5000/a/b:v1')).toBe('127.0.0.1:5000/a/b:v1');
    expect(normalizeRef(`a/b@${DIGEST}`)).toBe(`a/b@${DIGEST}`);
  });

  it('spells one image one way (canonical) and as Docker lists it (familiar)', () => {
    for (const r of [
      'busybox',
      'busybox:latest',
      'docker.io/busybox',
      'docker.io/library/busybox:latest',
      'index.docker.io/library/busybox',
    ]) {
      expect(canonicalRef(r)).toBe('docker.io/library/busybox:latest');
      expect(familiarRef(r)).toBe('busybox:latest');
    }
    expect(familiarRef('docker.io/user/app')).toBe('user/app:latest');
    expect(familiarRef('registry.k8s.io/pause:3.10')).toBe('registry.k8s.io/pause:3.10');
    expect(familiarRef(`docker.io/library/busybox@${DIGEST}`)).toBe(`busybox@${DIGEST}`);
    expect(canonicalRef('quay.io/a/b')).not.toBe(canonicalRef('docker.io/a/b'));
  });

  it('names the registry host', () => {
    expect(registryHost('busybox')).toBe('docker.io');
    expect(registryHost('user/app')).toBe('docker.io');
    expect(registryHost('127.0.0.1:5000/a/b')).toBe('127.0.0.1:5000');
    expect(registryHost('localhost/a')).toBe('localhost');
    expect(registryHost('registry.k8s.io/pause:3.10')).toBe('registry.k8s.io');
  });
});

describe('pull errors', () => {
  // messages as dockerd 20.10 answers them (probed against Debian's docker-registry)
  it.each([
    ['unauthorized: authentication required', 500, 'unauthenticated'],
    ['Head "http://127.0.0.1:45002/v2/probe/bb/manifests/v1": no basic auth credentials', 500, 'unauthenticated'],
    [
      "pull access denied for x, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
      404,
      'unauthenticated',
    ],
    ['denied: requested access to the resource is denied', 500, 'permission-denied'],
    ['manifest for 127.0.0.1:45001/probe/nope:v1 not found: manifest unknown: manifest unknown', 404, 'not-found'],
    ['Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused', 500, 'unavailable'],
    ['Get "https://nowhere.invalid/v2/": dial tcp: lookup nowhere.invalid: no such host', 500, 'unavailable'],
    ['invalid reference format: repository name must be lowercase', 400, 'invalid-argument'],
    ['something odd', 500, 'unknown'],
    ['something odd', 401, 'unauthenticated'],
  ])('%s (HTTP %d) -> %s', (msg, http, code) => {
    expect(pullErrorKind(msg, http)).toBe(code);
  });

  it("keeps the registry's message and drops docker-modem's HTTP wrapper", () => {
    const modemErr = Object.assign(new Error('(HTTP code 500) server error - unauthorized: authentication required '), {
      statusCode: 500,
      json: null,
    });
    expect(registryMessage(modemErr)).toBe('unauthorized: authentication required');
    const e = pullError('r/x:1', modemErr);
    expect(e.kind).toBe('unauthenticated');
    expect(e.message).toBe('pull image r/x:1: unauthorized: authentication required');
    // an error already prefixed is not prefixed twice
    expect(pullError('r/x:1', new DomainError('unknown', 'pull image r/x:1: manifest unknown')).message).toBe(
      'pull image r/x:1: manifest unknown',
    );
  });

  it('maps cancellation and an unreachable daemon', () => {
    const abort = Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });
    expect(pullError('x', abort).kind).toBe('cancelled');
    expect(
      pullError('x', Object.assign(new Error('connect ENOENT /var/run/docker.sock'), { code: 'ENOENT' })).kind,
    ).toBe('unavailable');
  });
});
