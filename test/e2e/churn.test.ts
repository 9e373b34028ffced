/**
 * Issue 11's correctness target in CI: a few churn runs (test/support/churn.ts;
 * the bench's `churn` section does 50) against a crishim on the shared dockerd,
 * and one with a restart of the Docker Engine in the middle (a private dockerd).
 * Each run fails on any change List or Status missed 200 ms after Docker
 * confirmed it, and on any GetContainerEvents transition missing, doubled, out
 * of order or carrying a status older than itself.
 */
import { BUSYBOX, docker, startCrishim, teardown, type Crishim } from './harness';
import { describeRun, openChurn, type ChurnSession } from '../support/churn';
import { startPrivateDockerd, type PrivateDockerd } from '../support/private-dockerd';

jest.setTimeout(300_000);

describe('churn behind crishim’s back', () => {
  let h: Crishim | undefined;
  let session: ChurnSession | undefined;
  beforeAll(async () => {
    h = await startCrishim({ subnetIndex: 219 });
    session = await openChurn({ runtime: h.runtime, docker, image: BUSYBOX });
  });
  afterAll(async () => {
    session?.close();
    await teardown(h);
  });

  it.each([1, 2, 3])('run %i: every change seen within 200 ms, every event once and in order', async (i) => {
    const r = await (session as ChurnSession).run();
    // the summary names each problem (container, change, what was seen)
    expect(describeRun(i, r)).toBe(describeRun(i, { ...r, ok: true, problems: [] }));
    expect(r.lags.length).toBeGreaterThanOrEqual(9);
  });
});

describe('churn with a Docker Engine restart in the middle', () => {
  let dockerd: PrivateDockerd | undefined;
  let h: Crishim | undefined;
  beforeAll(async () => {
    dockerd = await startPrivateDockerd({
      bridge: 'crishim-ch2',
      images: ['registry.k8s.io/pause:3.10', BUSYBOX],
      from: docker,
    });
    h = await startCrishim({ subnetIndex: 221, args: ['--docker-endpoint', dockerd.socketEndpoint] });
  });
  afterAll(async () => {
    await teardown(h);
    await dockerd?.close();
  });

  it('List, Status and events stay right through the restart and after it', async () => {
    const d = dockerd as PrivateDockerd;
    const session = await openChurn({
      runtime: (h as Crishim).runtime,
      docker: d.api,
      image: BUSYBOX,
      restartDocker: () => d.restart(),
    });
    try {
      const r = await session.run();
      expect(describeRun(1, r)).toBe(describeRun(1, { ...r, ok: true, problems: [] }));
    } finally {
      session.close();
    }
  });
});
