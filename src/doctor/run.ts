import { capabilitiesCheck } from './checks/capabilities';
import { cgroupCheck } from './checks/cgroup';
import { cniConfigCheck } from './checks/cni-config';
import { criSocketCheck } from './checks/cri-socket';
import { dockerEndpointCheck } from './checks/docker-endpoint';
import { dockerVersionCheck } from './checks/docker-version';
import { kernelFeaturesCheck } from './checks/kernel-features';
import { kubeletCgroupDriverCheck } from './checks/kubelet-cgroup-driver';
import { oomScoreCheck } from './checks/oom-score';
import { podForwardingCheck } from './checks/pod-forwarding';
import { rootDirectoryCheck } from './checks/root-directory';
import { sandboxImageCheck } from './checks/sandbox-image';
import type { Check, CheckResult, DoctorContext } from './types';

/** In the order an operator fixes things: Docker first, then what depends on it. */
export const CHECKS: readonly Check[] = [
  dockerEndpointCheck,
  dockerVersionCheck,
  cgroupCheck,
  kubeletCgroupDriverCheck,
  cniConfigCheck,
  podForwardingCheck,
  sandboxImageCheck,
  rootDirectoryCheck,
  criSocketCheck,
  oomScoreCheck,
  capabilitiesCheck,
  kernelFeaturesCheck,
];

/** Runs every check; one that throws is reported as failed with its error, never aborts the rest. */
export async function runChecks(ctx: DoctorContext, checks: readonly Check[] = CHECKS): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  for (const check of checks) {
    try {
      out.push(await check.run(ctx));
    } catch (err) {
      out.push({
        name: check.name,
        status: 'fail',
        found: `the check itself failed: ${(err as Error).message}`,
        action: 'report this as a crishim bug',
      });
    }
  }
  return out;
}

export function exitCode(results: readonly CheckResult[]): number {
  return results.some((r) => r.status === 'fail') ? 1 : 0;
}

/** One line per check: `ok    docker-endpoint  Docker answers at ...  -> what to do`. */
export function formatText(results: readonly CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length));
  const lines = results.map(
    (r) =>
      `${r.status.padEnd(4)}  ${r.name.padEnd(width)}  ${r.found}${r.action && r.status !== 'ok' ? `  -> ${r.action}` : ''}`,
  );
  const failed = results.filter((r) => r.status === 'fail').length;
  const warned = results.filter((r) => r.status === 'warn').length;
  lines.push(failed ? `${failed} check(s) failed, ${warned} warning(s)` : `no check failed (${warned} warning(s))`);
  return lines.join('\n') + '\n';
}

export function formatJson(results: readonly CheckResult[]): string {
  return JSON.stringify({ ok: exitCode(results) === 0, checks: results }, null, 2) + '\n';
}
