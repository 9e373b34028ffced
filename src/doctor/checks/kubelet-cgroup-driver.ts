import type { Check, HostProbes } from '../types';

/** Where kubeadm writes the kubelet's configuration: read when no kubelet runs here yet. */
export const KUBEADM_KUBELET_CONFIG = '/var/lib/kubelet/config.yaml';
/** The kubelet's own default when neither its flags nor its configuration name a driver. */
const KUBELET_DEFAULT = 'cgroupfs';

/** The kubelet's setting and where it was read, with what it was read from. */
export interface KubeletDriver {
  driver: string;
  from: string;
  /** The running kubelet's command line; undefined when read from kubeadm's file alone. */
  args?: readonly string[];
  /** The KubeletConfiguration read, if any. */
  config?: string;
}

/** A flag's value from a Go-style command line: `--name=value` or `--name value`; the last one wins, as in pflag. */
export function flagValue(args: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith(`--${name}=`)) value = args[i].slice(name.length + 3);
    else if (args[i] === `--${name}` && i + 1 < args.length) value = args[++i];
  }
  return value;
}

/**
 * `cgroupDriver` of a KubeletConfiguration, YAML or JSON (the kubelet reads both): a top-level
 * key, the only one of that name in the schema, so no YAML parser is needed for it. It starts a
 * line or follows `{` or `,` (JSON on one line).
 */
export function configuredDriver(text: string): string | undefined {
  return /(?:^|[{,])\s*["']?cgroupDriver["']?\s*:\s*["']?([A-Za-z]+)/m.exec(text)?.[1];
}

/**
 * What the kubelet on this host is set to: a running kubelet's `--cgroup-driver`, else the
 * file its `--config` names, else its default; with no kubelet running, kubeadm's file.
 * Undefined when none of these is found.
 */
export async function kubeletDriver(probes: HostProbes): Promise<KubeletDriver | undefined> {
  const [args] = await probes.kubeletArgs();
  if (args) {
    const file = flagValue(args, 'config');
    const config = file === undefined ? undefined : await probes.readText(file);
    const flag = flagValue(args, 'cgroup-driver');
    if (flag) return { driver: flag, from: "the running kubelet's --cgroup-driver", args, config };
    const set = config === undefined ? undefined : configuredDriver(config);
    if (file !== undefined && set) return { driver: set, from: file, args, config };
    const why = file === undefined ? 'no --cgroup-driver or --config' : `${file} sets no cgroupDriver or is unreadable`;
    return { driver: KUBELET_DEFAULT, from: `the running kubelet's default (${why})`, args, config };
  }
  const config = await probes.readText(KUBEADM_KUBELET_CONFIG);
  if (config === undefined) return undefined;
  return { driver: configuredDriver(config) ?? KUBELET_DEFAULT, from: KUBEADM_KUBELET_CONFIG, config };
}

const GATE = 'KubeletCgroupDriverFromCRI';

/**
 * Whether a kubelet of `version` asks its runtime for the cgroup driver (KEP-4033: the
 * KubeletCgroupDriverFromCRI gate, alpha and off from 1.28, beta and on from 1.31, locked on
 * from 1.34), as its `--feature-gates` flag, else its configuration's `featureGates`, else the
 * version's default says; and why, in words. Undefined when the version is not known.
 */
export function driverFromCri(
  version: string | undefined,
  setting: Pick<KubeletDriver, 'args' | 'config'>,
): { on: boolean; why: string } | undefined {
  const minor = /^v?1\.(\d+)\./.exec(version ?? '')?.[1];
  if (minor === undefined) return undefined;
  const m = Number(minor);
  if (m >= 34) return { on: true, why: `${GATE} is always on from 1.34` };
  if (m < 28) return { on: false, why: `${GATE} came in 1.28` };
  const flag = (flagValue(setting.args ?? [], 'feature-gates') ?? '')
    .split(',')
    .map((kv) => kv.trim().split('='))
    .find(([k]) => k === GATE)?.[1];
  if (flag === 'true' || flag === 'false') return { on: flag === 'true', why: `--feature-gates sets ${GATE}=${flag}` };
  // the gate's name is unique in a KubeletConfiguration: a key of featureGates, YAML or JSON
  const set = new RegExp(`["']?${GATE}["']?\\s*:\\s*["']?(true|false)`).exec(setting.config ?? '')?.[1];
  if (set) return { on: set === 'true', why: `its configuration's featureGates sets ${GATE}: ${set}` };
  return { on: m >= 31, why: `${GATE} is ${m >= 31 ? 'on' : 'off'} by default in 1.${m}` };
}

/**
 * The kubelet's cgroup driver against Docker's. A kubelet that asks its runtime
 * (KubeletCgroupDriverFromCRI) takes Docker's from crishim's RuntimeConfig answer and ignores
 * its own setting; an older one names pod cgroups in its own driver's form: under Docker's
 * systemd driver crishim refuses a cgroupfs path (naming both drivers), and under cgroupfs a
 * slice path becomes plain directories in systemd's tree.
 */
export const kubeletCgroupDriverCheck: Check = {
  name: 'kubelet-cgroup-driver',
  async run({ engine, probes }) {
    const docker = engine.reachable ? engine.cgroupDriver : undefined;
    if (!docker)
      return {
        name: this.name,
        status: 'warn',
        found: 'not compared: Docker reports no cgroup driver',
        action: 'see cgroup',
      };
    const kubelet = await kubeletDriver(probes);
    if (!kubelet)
      return {
        name: this.name,
        status: 'ok',
        found: `no kubelet runs here and ${KUBEADM_KUBELET_CONFIG} is absent: give the kubelet cgroupDriver ${docker}`,
      };
    if (kubelet.driver === docker)
      return { name: this.name, status: 'ok', found: `the kubelet (${kubelet.from}) and Docker both use ${docker}` };
    const version = await probes.kubeletVersion();
    const fromCri = driverFromCri(version, kubelet);
    if (fromCri?.on)
      return {
        name: this.name,
        status: 'ok',
        found:
          `the kubelet ${version} takes Docker's ${docker} from crishim's RuntimeConfig (${fromCri.why}); ` +
          `its own setting, ${kubelet.driver} (${kubelet.from}), is not used`,
      };
    return {
      name: this.name,
      status: 'warn',
      found:
        `the kubelet is set to ${kubelet.driver} (${kubelet.from}), Docker uses ${docker}` +
        (fromCri ? `; the kubelet ${version} does not ask its runtime (${fromCri.why})` : ''),
      action:
        `set the kubelet's cgroupDriver to ${docker} (or run dockerd with native.cgroupdriver=${kubelet.driver}); ` +
        `only a kubelet that takes the driver from its runtime (${GATE}, on by default from 1.31) follows Docker's by itself`,
    };
  },
};
