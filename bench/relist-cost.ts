/**
 * The `relist-cost` section: what one PLEG relist (ListPodSandbox +
 * ListContainers) costs crishim in CPU time at a given number of pods, asked
 * back to back so nothing else runs in the daemon meanwhile. CPU time
 * (schedstat of every daemon thread) rather than latency, since other
 * processes on a shared machine stretch wall time but not the daemon's own
 * CPU. The same-run baseline is dockerd's CPU for the two `docker ps` a
 * runtime without a view of its own would make.
 */
import { readFileSync } from 'fs';
import type Docker from 'dockerode';
import { cpuNs, pct, rssMiB } from './measure';
import { dockerRelist, relistInTurn, type KubeletAuthority, type KubeletClient } from './kubelet-client';

/** CPU time of a process's live threads in ms. */
const cpuMs = (pid: number): number => cpuNs(pid) / 1e6;

export interface RelistTarget {
  pid: number;
  call<T>(method: string, req: unknown): Promise<T>;
  /** Starts a host-network pod with one long-running container; answers the sandbox id. */
  runPod(): Promise<string>;
  removePod(id: string): Promise<void>;
  /** A kubelet-shaped client (bench/kubelet-client.ts) sending that `:authority`, for the shim's cost. */
  kubeletClient?(authority: KubeletAuthority): KubeletClient;
}

/** Rounds of each client in turn: the machine's drift over a minute must not decide the ratio. */
const AUTHORITY_ROUNDS = 3;

/**
 * CPU per relist for a client sending `localhost` against one sending the socket path, in
 * alternating rounds, the least of each side's rounds: the round the machine disturbed least,
 * since both sides make the same calls on the same pods.
 */
async function authorityCost(
  pid: number,
  client: (authority: KubeletAuthority) => KubeletClient,
  calls: number,
): Promise<Record<KubeletAuthority, number>> {
  const clients = { localhost: client('localhost'), 'socket-path': client('socket-path') };
  const best: Record<KubeletAuthority, number> = { localhost: Infinity, 'socket-path': Infinity };
  try {
    for (let round = 0; round < AUTHORITY_ROUNDS; round++) {
      for (const a of ['localhost', 'socket-path'] as const) {
        const { cpu } = await measure(pid, calls, () => clients[a].relist());
        best[a] = Math.min(best[a], cpu);
      }
    }
  } finally {
    for (const c of Object.values(clients)) c.close();
  }
  return best;
}

type Record4 = (what: string, crishim: string, raw: string, ratio: string) => void;

const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/** `fn` `n` times in a row: CPU ms of `pid` per call and each call's latency. */
async function measure(pid: number, n: number, fn: () => Promise<unknown>): Promise<{ cpu: number; lat: number[] }> {
  for (let i = 0; i < Math.min(20, n); i++) await fn();
  const lat: number[] = [];
  const c0 = cpuMs(pid);
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await fn();
    lat.push(now() - t0);
  }
  return { cpu: (cpuMs(pid) - c0) / n, lat };
}

export async function relistCost(
  t: RelistTarget,
  docker: Docker,
  sizes: { pods: number; calls: number },
  record: Record4,
): Promise<void> {
  const dockerd = Number(readFileSync(process.env.DOCKERD_PIDFILE ?? '/var/run/docker.pid', 'utf8').trim());
  const pods: string[] = [];
  const idle = rssMiB(t.pid);
  try {
    for (let i = 0; i < sizes.pods; i++) pods.push(await t.runPod());
    const f = (n: number): string => `${n.toFixed(2)} ms`;
    const relist = (): Promise<unknown> => relistInTurn((method) => t.call(method, {}));
    const raw = await measure(dockerd, sizes.calls, () => dockerRelist(docker));
    const cri = await measure(t.pid, sizes.calls, relist);
    const tag = `relist at ${sizes.pods} pods, ${sizes.calls} calls in a row`;
    record(
      `${tag}: CPU per relist (crishim vs dockerd for 2 docker ps)`,
      f(cri.cpu),
      f(raw.cpu),
      (cri.cpu / raw.cpu).toFixed(2),
    );
    record(
      `${tag}: relist p50 / p99`,
      `${f(pct(cri.lat, 50))} / ${f(pct(cri.lat, 99))}`,
      `${f(pct(raw.lat, 50))} / ${f(pct(raw.lat, 99))}`,
      (pct(cri.lat, 50) / pct(raw.lat, 50)).toFixed(2),
    );
    const byPod = await measure(t.pid, sizes.calls, () =>
      t.call('ListContainers', { filter: { pod_sandbox_id: pods[0] } }),
    );
    const status = await measure(t.pid, sizes.calls, () => t.call('PodSandboxStatus', { pod_sandbox_id: pods[0] }));
    record(`${tag}: CPU per ListContainers(pod) / PodSandboxStatus`, `${f(byPod.cpu)} / ${f(status.cpu)}`, '-', '-');
    if (t.kubeletClient) {
      const by = await authorityCost(t.pid, t.kubeletClient, sizes.calls);
      record(
        `${tag}: CPU per relist, kubelet-shaped client sending :authority localhost / the socket path (1.26-1.29 kubelets), least of ${AUTHORITY_ROUNDS} rounds each`,
        `${f(by.localhost)} / ${f(by['socket-path'])}`,
        '-',
        (by['socket-path'] / by.localhost).toFixed(2),
      );
    }
    record(
      `${tag}: runtime RSS idle before the pods / after the calls`,
      `${idle.toFixed(1)} MiB / ${rssMiB(t.pid).toFixed(1)} MiB`,
      '-',
      '-',
    );
  } finally {
    for (const id of pods) await t.removePod(id).catch(() => undefined);
  }
}
