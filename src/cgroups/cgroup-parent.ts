import * as path from 'path';
import type { EngineInfo } from '../docker/engine-info';
import { failedPrecondition } from '../errors';

/**
 * A pod's cgroup parent as Docker's cgroup driver takes it.
 *
 * The kubelet names the pod cgroup in its own driver's form: `/kubepods/besteffort/pod<uid>` with
 * cgroupfs, `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice` with
 * systemd. Docker's systemd driver hands the parent to runc as a unit name, and runc refuses a
 * slice name with a `/` in it, so every container of the pod would fail to start. A slice's name
 * already says where it sits (systemd nests `a-b-c.slice` in `a-b.slice` in `a.slice`), so the last
 * segment is the whole of it, as dockershim passed it.
 */
export function dockerCgroupParent(field: string, parent: string, driver: string | undefined): string {
  if (!parent || driver !== 'systemd') return parent;
  const slice = path.posix.basename(parent);
  if (slice.length <= '.slice'.length || !slice.endsWith('.slice')) {
    // Docker would refuse it too, but not say which side is misconfigured
    throw failedPrecondition(
      `${field} ${JSON.stringify(parent.slice(0, 200))} is not a systemd slice, but Docker uses the systemd ` +
        `cgroup driver: run the kubelet with cgroupDriver systemd (or dockerd with native.cgroupdriver=cgroupfs)`,
    );
  }
  return slice;
}

/** Docker's cgroup driver, asking Docker once when it has not been told yet (a parent is only converted for systemd). */
export async function cgroupDriverFor(engine: EngineInfo, parent: string): Promise<string | undefined> {
  if (!parent) return undefined;
  const known = engine.current().cgroupDriver;
  return known ?? (await engine.refresh()).cgroupDriver;
}
