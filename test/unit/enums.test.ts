import { checkEnums } from '../../src/cri/enums';
import { DomainError } from '../../src/errors';

function refusal(message: string, req: unknown): DomainError | undefined {
  try {
    checkEnums(message, req);
  } catch (err) {
    return err as DomainError;
  }
  return undefined;
}

describe('enum fields outside the proto', () => {
  it('are refused wherever they are, naming the field', () => {
    const r = refusal('RunPodSandboxRequest', { config: { port_mappings: [{ protocol: 'TCP' }, { protocol: 7 }] } });
    expect(r?.kind).toBe('invalid-argument');
    expect(r?.message).toMatch(/config\.port_mappings\[1\]\.protocol 7 is not a valid Protocol/);
    expect(refusal('CreateContainerRequest', { config: { mounts: [{ propagation: 9 }] } })?.message).toMatch(
      /mounts\[0\]\.propagation/,
    );
    expect(
      refusal('CreateContainerRequest', { config: { linux: { security_context: { namespace_options: { pid: 42 } } } } })
        ?.message,
    ).toMatch(/namespace_options\.pid/);
  });

  it('let the values the proto defines pass', () => {
    expect(
      refusal('RunPodSandboxRequest', {
        config: {
          port_mappings: [{ protocol: 'UDP' }],
          linux: { security_context: { namespace_options: { network: 'NODE' } } },
        },
      }),
    ).toBeUndefined();
    expect(refusal('CreateContainerRequest', { config: { stop_signal: 'SIGNAL_SIGTERM' } })).toBeUndefined();
  });
});
