import { status } from '@grpc/grpc-js';
import { dockerAuth, imageUser, isImageRef, pullError, registryHost } from '../../src/cri/image-service';
import { CriError } from '../../src/server/errors';
import { normalizeRef } from '../../src/docker/images';

describe('image references', () => {
  it.each([
    'busybox',
    'busybox:1.36',
    'registry.k8s.io/pause:3.10',
    '127.0.0.1:5000/crishim/test:v1',
    'gcr.io/k8s-staging-cri-tools/test-image-digest@sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf',
    'sha256:9700f9a2f5bf2c45f2f605a0bd3bce7cf37420ec9d3ed50ac2758413308766bf',
    '9700f9a2f5bf',
  ])('accepts %s', (ref) => expect(isImageRef(ref)).toBe(true));

  it.each(['', 'Upper', 'a/UPPER', '../../etc/passwd', 'a b', 'ü∂ƒ', 'x:y:z', '/abs'])('rejects %j', (ref) => expect(isImageRef(ref)).toBe(false));

  it('normalizes like docker pull', () => {
    expect(normalizeRef('busybox')).toBe('busybox:latest');
    expect(normalizeRef('127.0.0.1:5000/a/b')).toBe('127.0.0.1:5000/a/b:latest');
    expect(normalizeRef('a/b@sha256:' + 'a'.repeat(64))).toBe('a/b@sha256:' + 'a'.repeat(64));
    expect(registryHost('busybox')).toBe('docker.io');
    expect(registryHost('127.0.0.1:5000/a/b')).toBe('127.0.0.1:5000');
    expect(registryHost('localhost/a')).toBe('localhost');
  });
});

describe('registry auth', () => {
  it('maps CRI AuthConfig onto Docker registry auth', () => {
    expect(dockerAuth(null, 'x')).toBeUndefined();
    expect(dockerAuth({ username: 'u', password: 'p', auth: '', server_address: '', identity_token: '', registry_token: '' }, 'reg.io/a')).toEqual({
      username: 'u',
      password: 'p',
      serveraddress: 'reg.io',
    });
    const b64 = Buffer.from('user:pa:ss').toString('base64');
    expect(dockerAuth({ username: '', password: '', auth: b64, server_address: 's', identity_token: '', registry_token: '' }, 'x')).toEqual({
      username: 'user',
      password: 'pa:ss',
      serveraddress: 's',
    });
  });
});

describe('pull errors', () => {
  it.each([
    ['unauthorized: authentication required', status.UNAUTHENTICATED],
    ['manifest unknown', status.NOT_FOUND],
    ['denied: requested access to the resource is denied', status.PERMISSION_DENIED],
    ['Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused', status.UNAVAILABLE],
  ])('%s -> %s', (msg, code) => {
    const e = pullError('r:1', new CriError(status.UNKNOWN, `pull image r:1: ${msg}`));
    expect(e.code).toBe(code);
    expect(e.message).toBe(`pull image r:1: ${msg}`);
  });
});

describe('image user', () => {
  it('splits uid and username', () => {
    expect(imageUser('1002')).toEqual({ uid: { value: '1002' }, username: '' });
    expect(imageUser('1003:1004')).toEqual({ uid: { value: '1003' }, username: '' });
    expect(imageUser('www-data:1004')).toEqual({ uid: null, username: 'www-data' });
    expect(imageUser('')).toEqual({ uid: null, username: '' });
  });
});
