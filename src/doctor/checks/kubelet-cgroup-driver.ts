import type { Check, HostProbes } from '../types';

/** Where kubeadm writes the kubelet's configuration: read when no kubelet runs here yet. */
export const KUBEADM_KUBELET_CONFIG = '/var/lib/kubelet/config.yaml';
/** The kubelet's own default when neither its flags nor its configuration name a driver. */
const KUBELET_DEFAULT = 'cgroupfs';

/** The kubelet's setting and where it was read. */
export interface KubeletDriver {
  driver: string;
  from: string;
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
    const flag = flagValue(args, 'cgroup-driver');
    if (flag) return { driver: flag, from: "the running kubelet's --cgroup-driver" };
    const file = flagValue(args, 'config');
    const text = file === undefined ? undefined : await probes.readText(file);
    const set = text === undefined ? undefined : configuredDriver(text);
    if (file !== undefined && set) return { driver: set, from: file };
    const why = file === undefined ? 'no --cgroup-driver or --config' : `${file} sets no cgroupDriver or is unreadable`;
    return { driver: KUBELET_DEFAULT, from: `the running kubelet's default (${why})` };
  }
  const text = await probes.readText(KUBEADM_KUBELET_CONFIG);
  if (text === undefined) return undefined;
  return { driver: configuredDriver(text) ?? KUBELET_DEFAULT, from: KUBEADM_KUBELET_CONFIG };
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
    return {
      name: this.name,
      status: 'warn',
      found: `the kubelet is set to ${kubelet.driver} (${kubelet.from}), Docker uses ${docker}`,
      action:
        `set the kubelet's cgroupDriver to ${docker} (or run dockerd with native.cgroupdriver=${kubelet.driver}); ` +
        `only a kubelet that takes the driver from its runtime (KubeletCgroupDriverFromCRI) follows Docker's by itself`,
    };
  },
};
