import { cgroupDriverFor, dockerCgroupParent } from '../../src/cgroups/cgroup-parent';
import type { EngineInfo, EngineSnapshot } from '../../src/docker/engine-info';

const F = 'config.linux.cgroup_parent';

describe('dockerCgroupParent', () => {
  it.each([
    ['/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podab12.slice', 'kubepods-burstable-podab12.slice'],
    ['kubepods-besteffort-pod1.slice', 'kubepods-besteffort-pod1.slice'],
    ['/kubepods.slice', 'kubepods.slice'],
    ['/kubepods.slice/kubepods-pod1.slice/', 'kubepods-pod1.slice'],
  ])('systemd: %s -> %s', (given, want) => {
    expect(dockerCgroupParent(F, given, 'systemd')).toBe(want);
  });

  it.each(['/kubepods/besteffort/pod1', '/kubepods.slice/pod1', '.slice', '/a/.slice'])(
    'systemd refuses %j, naming the field and the fix',
    (given) => {
      expect(() => dockerCgroupParent(F, given, 'systemd')).toThrow(
        expect.objectContaining({ kind: 'failed-precondition', message: expect.stringContaining(F) }),
      );
    },
  );

  it.each([
    ['cgroupfs', '/kubepods/besteffort/pod1'],
    ['cgroupfs', '/kubepods.slice/kubepods-pod1.slice'],
    [undefined, '/kubepods/pod1'],
    ['systemd', ''],
  ])('%s keeps %j as given', (driver, given) => {
    expect(dockerCgroupParent(F, given, driver)).toBe(given);
  });
});

describe('cgroupDriverFor', () => {
  const engine = (current: string | undefined, refreshed: string | undefined) => {
    let refreshes = 0;
    const snap = (d: string | undefined): EngineSnapshot => ({
      reachable: true,
      runtimes: [],
      checkedAt: new Date(),
      cgroupDriver: d,
    });
    const e = {
      current: () => snap(current),
      refresh: async () => {
        refreshes++;
        return snap(refreshed);
      },
    } as unknown as EngineInfo;
    return { e, refreshes: () => refreshes };
  };

  it('uses the known driver without asking Docker', async () => {
    const { e, refreshes } = engine('systemd', 'cgroupfs');
    await expect(cgroupDriverFor(e, '/x.slice')).resolves.toBe('systemd');
    expect(refreshes()).toBe(0);
  });

  it('asks Docker once when the driver is not known yet', async () => {
    const { e, refreshes } = engine(undefined, 'systemd');
    await expect(cgroupDriverFor(e, '/x.slice')).resolves.toBe('systemd');
    expect(refreshes()).toBe(1);
  });

  it('does not ask for a pod without a parent', async () => {
    const { e, refreshes } = engine(undefined, 'systemd');
    await expect(cgroupDriverFor(e, '')).resolves.toBeUndefined();
    expect(refreshes()).toBe(0);
  });
});
