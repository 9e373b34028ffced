import { buildCli, parseConfig, type Config } from '../../src/config';
import type { EngineSnapshot } from '../../src/docker/engine-info';
import { capabilitiesCheck, missingCaps } from '../../src/doctor/checks/capabilities';
import { cgroupCheck } from '../../src/doctor/checks/cgroup';
import { cniConfigCheck } from '../../src/doctor/checks/cni-config';
import { podForwardingCheck } from '../../src/doctor/checks/pod-forwarding';
import { criSocketCheck } from '../../src/doctor/checks/cri-socket';
import { dockerEndpointCheck } from '../../src/doctor/checks/docker-endpoint';
import { compareVersions, dockerVersionCheck } from '../../src/doctor/checks/docker-version';
import { kernelFeaturesCheck } from '../../src/doctor/checks/kernel-features';
import {
  configuredDriver,
  flagValue,
  KUBEADM_KUBELET_CONFIG,
  kubeletCgroupDriverCheck,
} from '../../src/doctor/checks/kubelet-cgroup-driver';
import { oomScoreCheck } from '../../src/doctor/checks/oom-score';
import { rootDirectoryCheck } from '../../src/doctor/checks/root-directory';
import { sandboxImageCheck } from '../../src/doctor/checks/sandbox-image';
import { exitCode, formatJson, formatText, runChecks } from '../../src/doctor/run';
import type { Check, DoctorContext, HostProbes } from '../../src/doctor/types';

/** A healthy host (this VM's cgroup v1 layout, full capabilities); each test breaks one thing. */
function healthyProbes(): HostProbes {
  const files = new Map<string, string>([['/proc/self/cgroup', '12:pids:/\n11:memory:/\n4:cpu,cpuacct:/\n0::/\n']]);
  const present = new Set([
    '/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage',
    '/sys/fs/cgroup/memory/memory.usage_in_bytes',
    '/sys/fs/cgroup/memory/memory.limit_in_bytes',
    '/sys/fs/cgroup/memory/memory.stat',
    '/sys/fs/cgroup/pids/cgroup.procs',
    '/proc/self/net/dev',
    '/proc/self/ns/net',
  ]);
  return {
    imagePresent: async () => true,
    registryError: async () => undefined,
    cniConfig: (confDir) => ({
      config: {
        cniVersion: '0.4.0',
        name: 'net',
        file: `${confDir}/10-net.conflist`,
        plugins: [{ type: 'bridge' }, { type: 'portmap' }],
      },
    }),
    writeError: async () => undefined,
    socketState: async () => 'absent',
    oomScoreFloor: async () => -1000,
    dockerdCapBnd: async () => [(1n << 41n) - 1n],
    kubeletArgs: async () => [],
    kubeletVersion: async () => undefined,
    lastCap: async () => 40,
    forwardPolicy: async () => 'ACCEPT',
    readText: async (f) => files.get(f),
    exists: async (f) => present.has(f),
    which: (bin) => (bin === 'nsenter' ? '/usr/bin/nsenter' : undefined),
  };
}

const reachable: EngineSnapshot = {
  reachable: true,
  version: '20.10.24',
  apiVersion: '1.41',
  cgroupDriver: 'cgroupfs',
  cgroupVersion: '1',
  runtimes: ['runc'],
  checkedAt: new Date(),
};
const unreachable: EngineSnapshot = {
  reachable: false,
  error: 'connect ENOENT /var/run/docker.sock',
  runtimes: [],
  checkedAt: new Date(),
};

function ctx(over: { probes?: Partial<HostProbes>; engine?: EngineSnapshot; flags?: string[] } = {}): DoctorContext {
  const config: Config = parseConfig(over.flags ?? [], buildCli());
  return { config, engine: over.engine ?? reachable, probes: { ...healthyProbes(), ...over.probes } };
}

async function run(check: Check, c: DoctorContext) {
  const r = await check.run(c);
  expect(r.name).toBe(check.name);
  return r;
}

describe('doctor checks: pass and fail paths', () => {
  it('docker-endpoint: ok when Docker answers, fail naming the endpoint and error when not', async () => {
    expect((await run(dockerEndpointCheck, ctx({ flags: ['--docker-endpoint', 'unix:///x.sock'] }))).status).toBe('ok');
    const r = await run(
      dockerEndpointCheck,
      ctx({ engine: unreachable, flags: ['--docker-endpoint', 'unix:///x.sock'] }),
    );
    expect(r).toMatchObject({ status: 'fail' });
    expect(r.found).toContain('unix:///x.sock');
    expect(r.found).toContain('ENOENT');
    expect(r.action).toMatch(/dockerd/);
  });

  it('docker-version: engine and negotiated API; warn on an old API, fail without Docker', async () => {
    const ok = await run(dockerVersionCheck, ctx());
    expect(ok).toMatchObject({ status: 'ok', found: 'Docker Engine 20.10.24, API 1.41 negotiated' });
    expect((await run(dockerVersionCheck, ctx({ engine: { ...reachable, apiVersion: '1.39' } }))).status).toBe('warn');
    expect((await run(dockerVersionCheck, ctx({ engine: unreachable }))).status).toBe('fail');
    expect(compareVersions('1.9', '1.41')).toBe(-1);
    expect(compareVersions('1.43', '1.41')).toBe(1);
  });

  it('cgroup: driver and version; warn on an unknown driver, fail without Docker', async () => {
    const ok = await run(cgroupCheck, ctx({ engine: { ...reachable, cgroupDriver: 'systemd', cgroupVersion: '2' } }));
    expect(ok.status).toBe('ok');
    expect(ok.found).toContain('systemd, cgroup v2');
    expect((await run(cgroupCheck, ctx({ engine: { ...reachable, cgroupDriver: undefined } }))).status).toBe('warn');
    expect((await run(cgroupCheck, ctx({ engine: unreachable }))).status).toBe('fail');
  });

  it("kubelet-cgroup-driver: reads a running kubelet, else kubeadm's file; warns on a mismatch", async () => {
    const check = (probes: Partial<HostProbes>, engine: EngineSnapshot = reachable) =>
      run(kubeletCgroupDriverCheck, ctx({ probes, engine }));
    const files = (m: Record<string, string>) => async (f: string) => m[f];
    // nothing to compare with: no kubelet process, no kubeadm file
    const none = await check({});
    expect(none.status).toBe('ok');
    expect(none.found).toContain('give the kubelet cgroupDriver cgroupfs');
    // kubeadm writes systemd; Docker here runs cgroupfs
    const kubeadm = await check({
      readText: files({ [KUBEADM_KUBELET_CONFIG]: 'kind: KubeletConfiguration\ncgroupDriver: systemd\n' }),
    });
    expect(kubeadm).toMatchObject({ status: 'warn' });
    expect(kubeadm.found).toBe(`the kubelet is set to systemd (${KUBEADM_KUBELET_CONFIG}), Docker uses cgroupfs`);
    expect(kubeadm.action).toContain("set the kubelet's cgroupDriver to cgroupfs");
    // the same file agrees with a systemd Docker
    const agree = await check(
      { readText: files({ [KUBEADM_KUBELET_CONFIG]: 'cgroupDriver: "systemd"\n' }) },
      { ...reachable, cgroupDriver: 'systemd' },
    );
    expect(agree).toMatchObject({
      status: 'ok',
      found: `the kubelet (${KUBEADM_KUBELET_CONFIG}) and Docker both use systemd`,
    });
    // a running kubelet's --config wins over kubeadm's file, and its flag over its --config
    const running = {
      kubeletArgs: async () => [['/usr/bin/kubelet', '--config', '/etc/k/kc.json']],
      readText: files({
        '/etc/k/kc.json': '{"kind":"KubeletConfiguration","cgroupDriver":"systemd"}',
        [KUBEADM_KUBELET_CONFIG]: 'cgroupDriver: cgroupfs',
      }),
    };
    expect((await check(running)).found).toBe('the kubelet is set to systemd (/etc/k/kc.json), Docker uses cgroupfs');
    const flagged = await check({
      ...running,
      kubeletArgs: async () => [['kubelet', '--config=/etc/k/kc.json', '--cgroup-driver=cgroupfs']],
    });
    expect(flagged).toMatchObject({
      status: 'ok',
      found: "the kubelet (the running kubelet's --cgroup-driver) and Docker both use cgroupfs",
    });
    // a config without the key leaves the kubelet on its default, cgroupfs
    const bare = await check(
      {
        kubeletArgs: async () => [['kubelet', '--config=/etc/k/empty.yaml']],
        readText: files({ '/etc/k/empty.yaml': 'kind: KubeletConfiguration\n' }),
      },
      { ...reachable, cgroupDriver: 'systemd' },
    );
    expect(bare.status).toBe('warn');
    expect(bare.found).toContain(
      "set to cgroupfs (the running kubelet's default (/etc/k/empty.yaml sets no cgroupDriver",
    );
    expect((await check({}, unreachable)).status).toBe('warn');
  });

  it('kubelet-cgroup-driver: a kubelet that takes the driver from crishim is not warned about', async () => {
    const check = (probes: Partial<HostProbes>) =>
      run(kubeletCgroupDriverCheck, ctx({ probes, engine: { ...reachable, cgroupDriver: 'systemd' } }));
    const kubelet = (version: string | undefined, args: string[], config = 'kind: KubeletConfiguration\n') =>
      check({
        kubeletArgs: async () => [['kubelet', '--config=/k.yaml', ...args]],
        readText: async (f) => (f === '/k.yaml' ? config : undefined),
        kubeletVersion: async () => version,
      });
    // the kubelet's default, cgroupfs, against Docker's systemd
    const beta = await kubelet('v1.31.4', []);
    expect(beta.status).toBe('ok');
    expect(beta.found).toBe(
      "the kubelet v1.31.4 takes Docker's systemd from crishim's RuntimeConfig (KubeletCgroupDriverFromCRI is on " +
        "by default in 1.31); its own setting, cgroupfs (the running kubelet's default (/k.yaml sets no cgroupDriver " +
        'or is unreadable)), is not used',
    );
    const alpha = await kubelet('v1.30.0', []);
    expect(alpha.status).toBe('warn');
    expect(alpha.found).toContain('does not ask its runtime (KubeletCgroupDriverFromCRI is off by default in 1.30)');
    // turned on by flag or by the configuration's featureGates, off by flag; the flag wins
    const config = 'featureGates:\n  KubeletCgroupDriverFromCRI: true\n';
    expect((await kubelet('v1.29.1', ['--feature-gates=KubeletCgroupDriverFromCRI=true'])).status).toBe('ok');
    expect((await kubelet('v1.29.1', [], config)).found).toContain("configuration's featureGates sets");
    const off = await kubelet('v1.32.0', ['--feature-gates', 'A=true,KubeletCgroupDriverFromCRI=false'], config);
    expect(off.status).toBe('warn');
    expect(off.found).toContain('--feature-gates sets KubeletCgroupDriverFromCRI=false');
    // locked on from 1.34 whatever the flag; absent before 1.28; unknown version: the mismatch warns
    expect((await kubelet('v1.34.1', ['--feature-gates=KubeletCgroupDriverFromCRI=false'])).status).toBe('ok');
    expect((await kubelet('v1.27.3', ['--feature-gates=KubeletCgroupDriverFromCRI=true'])).status).toBe('warn');
    const unknown = await kubelet(undefined, []);
    expect(unknown.status).toBe('warn');
    expect(unknown.found).toBe(
      "the kubelet is set to cgroupfs (the running kubelet's default (/k.yaml sets no cgroupDriver or is " +
        'unreadable)), Docker uses systemd',
    );
  });

  it('kubelet-cgroup-driver parsing: pflag-style flags, YAML or JSON configs', () => {
    expect(flagValue(['kubelet', '--cgroup-driver', 'systemd'], 'cgroup-driver')).toBe('systemd');
    expect(flagValue(['kubelet', '--cgroup-driver=a', '--cgroup-driver=b'], 'cgroup-driver')).toBe('b');
    expect(flagValue(['kubelet', '--cgroup-driverx=a', '--cgroup-driver'], 'cgroup-driver')).toBeUndefined();
    expect(configuredDriver('apiVersion: kubelet.config.k8s.io/v1beta1\ncgroupDriver: systemd # kubeadm\n')).toBe(
      'systemd',
    );
    expect(configuredDriver("cgroupDriver: 'cgroupfs'")).toBe('cgroupfs');
    expect(configuredDriver('{\n  "cgroupDriver": "systemd"\n}')).toBe('systemd');
    expect(configuredDriver('cgroupsPerQOS: true\n')).toBeUndefined();
    expect(configuredDriver('{"kind":"KubeletConfiguration","cgroupDriver":"systemd"}')).toBe('systemd');
    expect(configuredDriver('# cgroupDriver: systemd\n')).toBeUndefined();
  });

  it("pod-forwarding: warns when Docker's FORWARD DROP meets a bridge config without the firewall plugin", async () => {
    const nfCall = (v: string) => async (f: string) =>
      f === '/proc/sys/net/bridge/bridge-nf-call-iptables' ? v : undefined;
    const dropped = await run(
      podForwardingCheck,
      ctx({ probes: { forwardPolicy: async () => 'DROP', readText: nfCall('1\n') } }),
    );
    expect(dropped.status).toBe('warn');
    expect(dropped.found).toContain('10-net.conflist');
    expect(dropped.action).toContain('"type": "firewall"');
    // bridged packets that skip iptables, or a policy that accepts, are not dropped
    for (const probes of [
      { forwardPolicy: async () => 'DROP', readText: nfCall('0\n') },
      { forwardPolicy: async () => 'ACCEPT', readText: nfCall('1\n') },
      { forwardPolicy: async () => undefined },
    ]) {
      expect((await run(podForwardingCheck, ctx({ probes }))).status).toBe('ok');
    }
    const withFirewall = await run(
      podForwardingCheck,
      ctx({
        probes: {
          forwardPolicy: async () => 'DROP',
          readText: nfCall('1\n'),
          cniConfig: () => ({
            config: {
              cniVersion: '0.4.0',
              name: 'n',
              file: '/c/10.conflist',
              plugins: [{ type: 'bridge' }, { type: 'firewall' }],
            },
          }),
        },
      }),
    );
    expect(withFirewall.status).toBe('ok');
  });

  it('cni-config: names the config and its plugins; fails naming the directory or the missing plugin', async () => {
    const ok = await run(cniConfigCheck, ctx({ flags: ['--cni-conf-dir', '/etc/cni/x'] }));
    expect(ok.status).toBe('ok');
    expect(ok.found).toContain('/etc/cni/x/10-net.conflist');
    expect(ok.found).toContain('bridge, portmap');
    const empty = await run(
      cniConfigCheck,
      ctx({
        flags: ['--cni-conf-dir', '/empty'],
        probes: { cniConfig: () => ({ problem: 'no CNI configuration file in /empty' }) },
      }),
    );
    expect(empty).toMatchObject({ status: 'fail', found: 'no CNI configuration file in /empty' });
    expect(empty.action).toContain('/empty');
    const noPlugin = await run(
      cniConfigCheck,
      ctx({
        probes: {
          cniConfig: () => ({
            problem: 'CNI config /c/10.conflist (network n) needs plugin portmap: binary not found in /opt/cni/bin',
          }),
        },
      }),
    );
    expect(noPlugin.status).toBe('fail');
    expect(noPlugin.found).toContain('portmap');
    expect(
      (
        await run(
          cniConfigCheck,
          ctx({ flags: ['--network-plugin', 'none'], probes: { cniConfig: () => ({ problem: 'x' }) } }),
        )
      ).status,
    ).toBe('ok');
  });

  it('sandbox-image: ok when present, warn when only pullable, fail when neither', async () => {
    expect((await run(sandboxImageCheck, ctx())).status).toBe('ok');
    expect((await run(sandboxImageCheck, ctx({ probes: { imagePresent: async () => false } }))).status).toBe('warn');
    const r = await run(
      sandboxImageCheck,
      ctx({
        flags: ['--pod-infra-container-image', 'reg.example/pause:9'],
        probes: { imagePresent: async () => false, registryError: async () => 'dial tcp: no route to host' },
      }),
    );
    expect(r.status).toBe('fail');
    expect(r.found).toContain('reg.example/pause:9');
    expect(r.found).toContain('no route to host');
    expect((await run(sandboxImageCheck, ctx({ engine: unreachable }))).status).toBe('fail');
  });

  it('root-directory: ok when writable, fail with the error when not', async () => {
    expect((await run(rootDirectoryCheck, ctx({ flags: ['--root-directory', '/var/lib/x'] }))).found).toBe(
      '/var/lib/x is writable',
    );
    const r = await run(
      rootDirectoryCheck,
      ctx({ probes: { writeError: async () => 'EROFS: read-only file system' } }),
    );
    expect(r.status).toBe('fail');
    expect(r.found).toContain('EROFS');
  });

  it("cri-socket: free, stale or held by a live daemon are fine; a non-socket file fails; fd:// is systemd's", async () => {
    for (const state of ['absent', 'stale', 'live'] as const) {
      expect((await run(criSocketCheck, ctx({ probes: { socketState: async () => state } }))).status).toBe('ok');
    }
    const live = await run(criSocketCheck, ctx({ probes: { socketState: async () => 'live' } }));
    expect(live.found).toContain('running daemon');
    const r = await run(
      criSocketCheck,
      ctx({
        flags: ['--container-runtime-endpoint', 'unix:///run/x.sock'],
        probes: { socketState: async () => 'not-a-socket' },
      }),
    );
    expect(r).toMatchObject({ status: 'fail', found: '/run/x.sock exists and is not a socket' });
    const fd = await run(
      criSocketCheck,
      ctx({ flags: ['--container-runtime-endpoint', 'fd://'], probes: { socketState: async () => 'not-a-socket' } }),
    );
    expect(fd.status).toBe('ok');
  });

  it('oom-score-adj: ok when -998 is allowed, warn with the floor when not', async () => {
    expect((await run(oomScoreCheck, ctx())).status).toBe('ok');
    expect((await run(oomScoreCheck, ctx({ probes: { oomScoreFloor: async () => -998 } }))).status).toBe('ok');
    const r = await run(oomScoreCheck, ctx({ probes: { oomScoreFloor: async () => 0 } }));
    expect(r.status).toBe('warn');
    expect(r.found).toContain('below 0');
  });

  it('capabilities: ok with the full set, warn naming what dockerd lacks (this VM: CAP_SYS_RESOURCE)', async () => {
    expect((await run(capabilitiesCheck, ctx())).status).toBe('ok');
    const r = await run(capabilitiesCheck, ctx({ probes: { dockerdCapBnd: async () => [0x1fffeffffffn] } }));
    expect(r.status).toBe('warn');
    expect(r.found).toContain('CAP_SYS_RESOURCE');
    expect(r.found).not.toContain('CAP_SYS_ADMIN');
    expect(missingCaps(0x1fffeffffffn, 40)).toEqual([24]);
    expect((await run(capabilitiesCheck, ctx({ probes: { dockerdCapBnd: async () => [] } }))).status).toBe('warn');
  });

  it('kernel-features: ok with the stats files, /proc net and nsenter; fail naming each missing one', async () => {
    expect((await run(kernelFeaturesCheck, ctx())).status).toBe('ok');
    const healthy = healthyProbes();
    const r = await run(
      kernelFeaturesCheck,
      ctx({
        probes: {
          exists: async (f) => f !== '/sys/fs/cgroup/memory/memory.stat' && (await healthy.exists(f)),
          which: () => undefined,
        },
      }),
    );
    expect(r.status).toBe('fail');
    expect(r.found).toContain('/sys/fs/cgroup/memory/memory.stat');
    expect(r.found).toContain('nsenter');
    const v2 = await run(
      kernelFeaturesCheck,
      ctx({
        probes: {
          readText: async (f) =>
            f === '/proc/self/cgroup'
              ? '0::/system.slice/crishim.service\n'
              : f === '/sys/fs/cgroup/cgroup.controllers'
                ? 'cpuset cpu io memory\n'
                : undefined,
        },
      }),
    );
    expect(v2.status).toBe('fail');
    expect(v2.found).toContain('pids controller');
  });
});

describe('doctor run and output', () => {
  it('exit code 0 with warnings only, 1 with a failure; a throwing check is a failure, not a crash', async () => {
    const warnOnly = await runChecks(ctx({ probes: { oomScoreFloor: async () => 0 } }));
    expect(warnOnly.map((r) => r.status)).toContain('warn');
    expect(exitCode(warnOnly)).toBe(0);
    const broken: Check = {
      name: 'broken',
      run: async () => {
        throw new Error('boom');
      },
    };
    const results = await runChecks(ctx(), [dockerEndpointCheck, broken]);
    expect(results[1]).toMatchObject({ name: 'broken', status: 'fail' });
    expect(results[1].found).toContain('boom');
    expect(exitCode(results)).toBe(1);
  });

  it('prints one line per check plus a summary, or JSON for tooling', async () => {
    const results = await runChecks(
      ctx({ probes: { cniConfig: () => ({ problem: 'no CNI configuration file in /e' }) } }),
    );
    const lines = formatText(results).trimEnd().split('\n');
    expect(lines).toHaveLength(results.length + 1);
    expect(lines.find((l) => l.startsWith('fail'))).toMatch(
      /^fail +cni-config +no CNI configuration file in \/e +-> put a CNI config in/,
    );
    expect(lines[lines.length - 1]).toBe('1 check(s) failed, 0 warning(s)');
    const json = JSON.parse(formatJson(results)) as { ok: boolean; checks: Array<{ name: string; status: string }> };
    expect(json.ok).toBe(false);
    expect(json.checks.map((c) => c.name)).toEqual(results.map((r) => r.name));
  });
});
