import { requestFields } from '../../src/server/call-handler';

describe('ids logged from the request itself', () => {
  it('takes the pod sandbox id, container id and image reference a request names', () => {
    expect(requestFields({ pod_sandbox_id: 'abc' })).toEqual({ podSandboxId: 'abc' });
    expect(requestFields({ container_id: 'def', cmd: ['true'] })).toEqual({ containerId: 'def' });
    expect(requestFields({ image: { image: 'busybox:latest' } })).toEqual({ image: 'busybox:latest' });
    expect(requestFields({ pod_sandbox_id: 'p', config: { image: { image: 'x' } } })).toEqual({ podSandboxId: 'p' });
  });

  it('ignores empty, missing and non-string values', () => {
    expect(requestFields({})).toEqual({});
    expect(requestFields(null)).toEqual({});
    expect(requestFields({ container_id: '', pod_sandbox_id: 5, image: null })).toEqual({});
  });

  it('caps what a request can put into a log line', () => {
    expect(requestFields({ container_id: 'x'.repeat(10_000) }).containerId).toHaveLength(128);
  });
});
