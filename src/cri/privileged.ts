import * as fs from 'fs';
import * as path from 'path';
import type * as Docker from '../docker/types';
import { invalidArgument } from '../errors';
import { type CapabilityGrant, normalizeCapability } from '../docker/capabilities';

/**
 * Privileged containers and `ALL` capabilities on hosts where Docker's own
 * `Privileged` cannot start anything (see docker/capabilities.ts): the same
 * grants through the fields Docker has.
 */

/** /dev entries that are per-container mounts, never host devices to copy (as Docker's own privileged mode skips them). */
const SKIP_DEV_DIRS = new Set(['pts', 'shm', 'mqueue', '.lxc', '.lxd-mounts', '.udev']);

/** Every character and block device under `devRoot`, mapped at the same path (what Docker's privileged mode creates). */
export function hostDevices(devRoot = '/dev'): Docker.DeviceMapping[] {
  const out: Docker.DeviceMapping[] = [];
  const walk = (dir: string, depth: number): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (depth === 0 && SKIP_DEV_DIRS.has(e.name)) continue;
        if (depth < 4) walk(full, depth + 1);
      } else if (e.isCharacterDevice() || e.isBlockDevice()) {
        const inContainer = path.join('/dev', path.relative(devRoot, full));
        out.push({ PathOnHost: full, PathInContainer: inContainer, CgroupPermissions: 'rwm' });
      }
    }
  };
  walk(devRoot, 0);
  return out.sort((a, b) => a.PathInContainer.localeCompare(b.PathInContainer));
}

/** The CRI capability lists as proto-loader delivers them. */
export interface CapabilityRequest {
  add_capabilities?: string[];
  drop_capabilities?: string[];
}

/**
 * Docker CapAdd/CapDrop for a CRI request, with the kubelet's (and containerd's)
 * meaning of `ALL`: add ALL grants every capability the host can grant, drop ALL
 * empties the set (and wins over add ALL), then the named adds and drops apply.
 * Without `ALL`, the lists go to Docker as they are.
 */
export function capabilityFields(
  req: CapabilityRequest | null | undefined,
  grant: CapabilityGrant,
  containerRef: string,
): Pick<Docker.HostConfig, 'CapAdd' | 'CapDrop'> {
  const add = (req?.add_capabilities ?? []).map(normalizeCapability);
  const drop = (req?.drop_capabilities ?? []).map(normalizeCapability);
  const grantable = new Set(grant.grantable);
  for (const c of add) {
    if (c === 'ALL') continue;
    if (!grantable.has(c)) {
      const why = grant.withheld.includes(c)
        ? `this host cannot grant it (${grant.source} lacks it)`
        : 'Docker does not know it';
      throw invalidArgument(`${containerRef}: capabilities.add_capabilities ${c}: ${why}`);
    }
  }
  if (!add.includes('ALL') && !drop.includes('ALL')) {
    return { CapAdd: add.length ? add : undefined, CapDrop: drop.length ? drop : undefined };
  }
  // Docker's own ALL asks for every capability it knows, which fails where some are withheld
  let set = new Set<string>();
  if (add.includes('ALL') && !drop.includes('ALL')) set = new Set(grant.grantable);
  for (const c of add) if (c !== 'ALL') set.add(c);
  for (const c of drop) set.delete(c);
  if (drop.includes('ALL') || !grant.dockerPrivilegedWorks || set.size < grant.grantable.length) {
    return { CapAdd: set.size ? [...set] : undefined, CapDrop: ['ALL'] };
  }
  return { CapAdd: ['ALL'], CapDrop: undefined };
}

/**
 * HostConfig fields of a privileged container. Where Docker's `Privileged` works
 * it is used as is; elsewhere the equivalent grants: every grantable capability,
 * every host device with an allow-all device cgroup rule, seccomp and AppArmor
 * unconfined, no masked or read-only /proc paths. Docker has no field for a
 * writable /sys or cgroupfs: both stay read-only mounts, which the container
 * may remount since it holds CAP_SYS_ADMIN without AppArmor or seccomp.
 */
export function privilegedFields(grant: CapabilityGrant, devices: () => Docker.DeviceMapping[]): Docker.HostConfig {
  if (grant.dockerPrivilegedWorks) return { Privileged: true };
  return {
    Privileged: false,
    CapAdd: [...grant.grantable],
    CapDrop: undefined,
    Devices: devices(),
    DeviceCgroupRules: ['a *:* rwm'],
    SecurityOpt: ['seccomp=unconfined', 'apparmor=unconfined'],
    // the CLI's `systempaths=unconfined`: the API wants the empty lists themselves (null means Docker's defaults)
    MaskedPaths: [],
    ReadonlyPaths: [],
  };
}

/** The one start-up line saying how privileged containers are granted here. */
export function describeGrant(grant: CapabilityGrant): { message: string; meta: Record<string, unknown> } {
  if (grant.dockerPrivilegedWorks) {
    return { message: "privileged containers use Docker's Privileged mode", meta: { source: grant.source } };
  }
  return {
    message:
      "docker cannot grant every capability it knows; privileged containers get the grantable capabilities, all host devices and no seccomp/AppArmor/masked paths instead of Docker's Privileged mode",
    meta: { withheld: grant.withheld, reason: `${grant.source} lacks them`, grantable: grant.grantable.length },
  };
}
