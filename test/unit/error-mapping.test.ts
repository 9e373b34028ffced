import { status } from '@grpc/grpc-js';
import { fromDockerError } from '../../src/docker/errors';
import { DomainError, notFound, type ErrorKind } from '../../src/errors';
import { grpcStatusOf } from '../../src/server/errors';

describe('domain error kinds -> gRPC status (server layer)', () => {
  it.each<[ErrorKind, status]>([
    ['not-found', status.NOT_FOUND],
    ['invalid-argument', status.INVALID_ARGUMENT],
    ['already-exists', status.ALREADY_EXISTS],
    ['failed-precondition', status.FAILED_PRECONDITION],
    ['unavailable', status.UNAVAILABLE],
    ['deadline-exceeded', status.DEADLINE_EXCEEDED],
    ['cancelled', status.CANCELLED],
    ['resource-exhausted', status.RESOURCE_EXHAUSTED],
    ['permission-denied', status.PERMISSION_DENIED],
    ['unauthenticated', status.UNAUTHENTICATED],
    ['unimplemented', status.UNIMPLEMENTED],
    ['internal', status.INTERNAL],
    ['unknown', status.UNKNOWN],
  ])('%s', (kind, code) => {
    expect(grpcStatusOf(kind)).toBe(code);
  });
});

describe('Docker errors -> domain errors', () => {
  const modem = (statusCode: number, message: string): Error =>
    Object.assign(new Error(`(HTTP code ${statusCode}) x - ${message}`), { statusCode, json: { message } });

  it.each<[number, ErrorKind]>([
    [400, 'invalid-argument'],
    [401, 'permission-denied'],
    [403, 'permission-denied'],
    [404, 'not-found'],
    [409, 'failed-precondition'],
    [500, 'unknown'],
  ])("HTTP %d is %s, with Docker's own message and the object named", (code, kind) => {
    const e = fromDockerError(modem(code, 'No such container: abc'), 'start container abc');
    expect(e.kind).toBe(kind);
    expect(e.message).toBe('start container abc: No such container: abc');
  });

  it('an unreachable daemon is unavailable; an abort is cancelled; ours pass through', () => {
    expect(
      fromDockerError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'list').kind,
    ).toBe('unavailable');
    expect(fromDockerError(Object.assign(new Error('aborted'), { name: 'AbortError' }), 'pull').message).toBe(
      'pull: cancelled',
    );
    const own = notFound('container abc');
    expect(fromDockerError(own, 'ignored')).toBe(own);
    expect(own).toBeInstanceOf(DomainError);
  });
});
