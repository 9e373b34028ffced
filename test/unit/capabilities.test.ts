import { execFileSync } from 'child_process';
import { promises as fsp } from 'fs';
import * as os from 'os';
import * as path from 'path';
import {
  CAPABILITY_NAMES,
  apiAtLeast,
  capabilitiesInMask,
  computeCapabilityGrant,
  detectCapabilityGrant,
  dockerKnownCapabilities,
  normalizeCapability,
  pidServingSocket,
} from '../../src/docker/capabilities';
import { capabilityFields, describeGrant, hostDevices, privilegedFields } from '../../src/cri/privileged';
import { DomainError } from '../../src/errors';

/** Every capability 0..40 (a 6.x kernel with nothing withheld). */
const FULL = capabilitiesInMask('000001ffffffffff');
/** This VM's set: everything but CAP_SYS_RESOURCE (24). */
const NO_SYS_RESOURCE = capabilitiesInMask('000001fffeffffff');

describe('capability masks and names', () => {
  it('reads a CapBnd mask bit by bit', () => {
    expect(capabilitiesInMask('0000000000000001')).toEqual(new Set([0]));
    expect(capabilitiesInMask('0000000001000000')).toEqual(new Set([24]));
    expect(FULL.size).toBe(41);
    expect(NO_SYS_RESOURCE.has(24)).toBe(false);
    expect(NO_SYS_RESOURCE.size).toBe(40);
  });

  it('normalises the spellings the CRI allows', () => {
    expect(normalizeCapability('sys_admin')).toBe('CAP_SYS_ADMIN');
    expect(normalizeCapability('CAP_NET_RAW')).toBe('CAP_NET_RAW');
    expect(normalizeCapability('all')).toBe('ALL');
  });

  it('knows which capabilities each Docker API generation accepts', () => {
    expect(apiAtLeast('1.41', '1.42')).toBe(false);
    expect(apiAtLeast('1.44', '1.42')).toBe(true);
    expect(apiAtLeast('2.0', '1.44')).toBe(true);
    expect(apiAtLeast(undefined, '1.0')).toBe(false);
    expect(dockerKnownCapabilities('1.41').at(-1)).toBe('CAP_AUDIT_READ');
    expect(dockerKnownCapabilities('1.41')).toHaveLength(38);
    expect(dockerKnownCapabilities('1.43')).toEqual(CAPABILITY_NAMES);
  });
});

describe('computeCapabilityGrant', () => {
  it('keeps Docker privileged mode with a full bounding set', () => {
    const g = computeCapabilityGrant('1.41', FULL, 'test');
    expect(g.dockerPrivilegedWorks).toBe(true);
    expect(g.withheld).toEqual([]);
    expect(g.grantable).toEqual(dockerKnownCapabilities('1.41'));
  });

  it('withholds what the bounding set lacks, and only what Docker knows is granted', () => {
    const g = computeCapabilityGrant('1.41', NO_SYS_RESOURCE, 'test');
    expect(g.dockerPrivilegedWorks).toBe(false);
    expect(g.withheld).toEqual(['CAP_SYS_RESOURCE']);
    expect(g.grantable).toContain('CAP_SYS_ADMIN');
    expect(g.grantable).not.toContain('CAP_SYS_RESOURCE');
    // the kernel has CAP_BPF, Docker 20.10 would refuse it as unknown
    expect(g.grantable).not.toContain('CAP_BPF');
    expect(g.grantable).toHaveLength(37);
    const newer = computeCapabilityGrant('1.44', NO_SYS_RESOURCE, 'test');
    expect(newer.grantable).toContain('CAP_BPF');
    expect(newer.withheld).toEqual(['CAP_SYS_RESOURCE']);
  });

  it('trusts Docker when the bounding set is unknown (remote engine)', () => {
    const g = computeCapabilityGrant('1.41', undefined, 'remote');
    expect(g.dockerPrivilegedWorks).toBe(true);
    expect(describeGrant(g).message).toMatch(/Docker's Privileged mode/);
  });

  it('says which capabilities were left out and why', () => {
    const line = describeGrant(computeCapabilityGrant('1.41', NO_SYS_RESOURCE, 'CapBnd of dockerd pid 7'));
    expect(line.meta).toEqual({
      withheld: ['CAP_SYS_RESOURCE'],
      reason: 'CapBnd of dockerd pid 7 lacks them',
      grantable: 37,
    });
  });
});

describe('finding the dockerd behind a socket', () => {
  let proc: string;
  beforeEach(async () => {
    proc = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-proc-'));
    await fsp.mkdir(path.join(proc, 'net'));
    await fsp.writeFile(
      path.join(proc, 'net', 'unix'),
      'Num       RefCount Protocol Flags    Type St Inode Path\n' +
        '0000000000000000: 00000002 00000000 00010000 0001 01 1111 /run/other.sock\n' +
        '0000000000000000: 00000002 00000000 00010000 0001 01 4242 /run/docker.sock\n',
    );
    for (const [pid, inode, capBnd] of [
      ['10', '1111', '000001ffffffffff'],
      ['20', '4242', '000001fffeffffff'],
    ]) {
      await fsp.mkdir(path.join(proc, pid, 'fd'), { recursive: true });
      await fsp.symlink(`socket:[${inode}]`, path.join(proc, pid, 'fd', '3'));
      await fsp.writeFile(path.join(proc, pid, 'status'), `Name:\tx\nCapBnd:\t${capBnd}\n`);
    }
  });
  afterEach(() => fsp.rm(proc, { recursive: true, force: true }));

  it('takes the bounding set of the process holding that socket, not of another daemon', async () => {
    expect(await pidServingSocket('/run/docker.sock', proc)).toBe(20);
    const g = await detectCapabilityGrant('1.41', '/run/docker.sock', proc);
    expect(g.withheld).toEqual(['CAP_SYS_RESOURCE']);
    expect(g.source).toBe('CapBnd of dockerd pid 20');
    const other = await detectCapabilityGrant('1.41', '/run/other.sock', proc);
    expect(other.dockerPrivilegedWorks).toBe(true);
  });

  it('falls back to Docker privileged mode when no process serves the socket', async () => {
    const g = await detectCapabilityGrant('1.41', '/run/none.sock', proc);
    expect(g.dockerPrivilegedWorks).toBe(true);
    expect(g.source).toMatch(/no process found/);
  });
});

describe('capabilityFields', () => {
  const restricted = computeCapabilityGrant('1.41', NO_SYS_RESOURCE, 'test');
  const full = computeCapabilityGrant('1.41', FULL, 'test');

  it('passes named lists through', () => {
    expect(
      capabilityFields({ add_capabilities: ['SYS_ADMIN'], drop_capabilities: ['NET_RAW'] }, restricted, 'c'),
    ).toEqual({
      CapAdd: ['CAP_SYS_ADMIN'],
      CapDrop: ['CAP_NET_RAW'],
    });
    expect(capabilityFields(undefined, restricted, 'c')).toEqual({ CapAdd: undefined, CapDrop: undefined });
  });

  it('turns add ALL into the grantable list where Docker cannot grant its own ALL', () => {
    const f = capabilityFields({ add_capabilities: ['ALL'], drop_capabilities: ['NET_RAW'] }, restricted, 'c');
    expect(f.CapDrop).toEqual(['ALL']);
    expect(f.CapAdd).toContain('CAP_SYS_ADMIN');
    expect(f.CapAdd).not.toContain('CAP_NET_RAW');
    expect(f.CapAdd).not.toContain('CAP_SYS_RESOURCE');
    expect(f.CapAdd).toHaveLength(36);
    expect(capabilityFields({ add_capabilities: ['ALL'] }, full, 'c')).toEqual({ CapAdd: ['ALL'], CapDrop: undefined });
  });

  it('lets drop ALL win over add ALL, then adds the named ones', () => {
    expect(
      capabilityFields({ add_capabilities: ['ALL', 'CHOWN'], drop_capabilities: ['ALL'] }, restricted, 'c'),
    ).toEqual({
      CapAdd: ['CAP_CHOWN'],
      CapDrop: ['ALL'],
    });
    expect(capabilityFields({ drop_capabilities: ['ALL'] }, full, 'c')).toEqual({
      CapAdd: undefined,
      CapDrop: ['ALL'],
    });
  });

  it('refuses a capability the host cannot grant, naming it and the container', () => {
    let err: unknown;
    try {
      capabilityFields({ add_capabilities: ['SYS_RESOURCE'] }, restricted, 'container web in pod sandbox p1');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).kind).toBe('invalid-argument');
    expect((err as DomainError).message).toMatch(
      /container web in pod sandbox p1: .*CAP_SYS_RESOURCE: this host cannot grant it/,
    );
    expect(() => capabilityFields({ add_capabilities: ['BPF'] }, restricted, 'c')).toThrow(/Docker does not know it/);
  });
});

describe('privilegedFields', () => {
  it("uses Docker's Privileged where it works", () => {
    expect(privilegedFields(computeCapabilityGrant('1.41', FULL, 't'), () => [])).toEqual({ Privileged: true });
  });

  it('grants the equivalent explicitly where it does not', () => {
    const devices = [{ PathOnHost: '/dev/kmsg', PathInContainer: '/dev/kmsg', CgroupPermissions: 'rwm' }];
    const f = privilegedFields(computeCapabilityGrant('1.41', NO_SYS_RESOURCE, 't'), () => devices);
    expect(f.Privileged).toBe(false);
    expect(f.CapAdd).toHaveLength(37);
    expect(f.Devices).toEqual(devices);
    expect(f.DeviceCgroupRules).toEqual(['a *:* rwm']);
    expect(f.SecurityOpt).toEqual(['seccomp=unconfined', 'apparmor=unconfined']);
    expect(f.MaskedPaths).toEqual([]);
    expect(f.ReadonlyPaths).toEqual([]);
  });
});

describe('hostDevices', () => {
  it('lists character and block devices, skipping per-container directories', async () => {
    const dev = await fsp.mkdtemp(path.join(os.tmpdir(), 'crishim-dev-'));
    try {
      await fsp.mkdir(path.join(dev, 'pts'));
      await fsp.mkdir(path.join(dev, 'net'));
      execFileSync('mknod', [path.join(dev, 'kmsg'), 'c', '1', '11']);
      execFileSync('mknod', [path.join(dev, 'loop0'), 'b', '7', '0']);
      execFileSync('mknod', [path.join(dev, 'net', 'tun'), 'c', '10', '200']);
      execFileSync('mknod', [path.join(dev, 'pts', '0'), 'c', '136', '0']);
      await fsp.writeFile(path.join(dev, 'regular'), '');
      await fsp.symlink('kmsg', path.join(dev, 'link'));
      expect(hostDevices(dev).map((d) => [d.PathOnHost.slice(dev.length), d.PathInContainer])).toEqual([
        ['/kmsg', '/dev/kmsg'],
        ['/loop0', '/dev/loop0'],
        ['/net/tun', '/dev/net/tun'],
      ]);
    } finally {
      await fsp.rm(dev, { recursive: true, force: true });
    }
  });
});
