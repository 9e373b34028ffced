import { releaseOrphanNetworks, TeardownRetries } from '../../src/network/orphan-teardown';
import type { ServiceDeps } from '../../src/service-deps';
import type { Logger } from '../../src/logging/logger';

describe('orphaned CNI teardowns that keep failing', () => {
  it('back off and are given up on after the budget, with one warning naming the sandbox and what stays', async () => {
    let dels = 0;
    const deps = {
      network: {
        cachedSandboxes: async () => ['a'.repeat(64)],
        tearDownPod: async () => {
          dels += 1;
          throw new Error('portmap: invalid container port 0');
        },
        podNetwork: async () => ({ ips: ['10.88.9.7'], networkName: 'crishim' }),
      },
    } as unknown as ServiceDeps;
    const warnings: Array<{ msg: string; meta: Record<string, unknown> }> = [];
    const log = {
      warn: (msg: string, meta: Record<string, unknown>) => warnings.push({ msg, meta }),
      info: () => undefined,
    } as unknown as Logger;
    const retries = new TeardownRetries(5);
    for (let round = 0; round < 100; round++) await releaseOrphanNetworks(deps, log, () => false, retries);
    expect(dels).toBe(5);
    const givenUp = warnings.filter((w) => /giving up/.test(w.msg));
    expect(givenUp).toHaveLength(1);
    expect(givenUp[0].meta).toMatchObject({ podSandboxId: 'a'.repeat(64), ips: ['10.88.9.7'], network: 'crishim' });
  });

  it('sits out more rounds after each failure', () => {
    const r = new TeardownRetries(10);
    const tried: number[] = [];
    for (let round = 0; round < 40; round++) {
      if (r.due('x')) {
        tried.push(round);
        r.failed('x');
      }
    }
    expect(tried).toEqual([0, 1, 3, 7, 15, 31]);
  });
});
