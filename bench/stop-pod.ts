/**
 * The `stop-pod` section: StopPodSandbox of a networked pod with one running container,
 * against the calls it cannot do without, made directly in the same run on an identical
 * pod: `docker stop -t 0` of the container beside the CNI DEL chain (the plugins run
 * from this run's conflist, last first), then `docker stop` of the pause container.
 * The ids and the pause pid the baseline needs are looked up before its clock starts.
 */
import type Docker from 'dockerode';
import { cniDel, readConfList } from './cni-chain';
import { pct } from './measure';

export interface StopPodTarget {
  call<T>(method: string, req: unknown): Promise<T>;
  runPod(): Promise<string>;
  /** The conflist the daemon's pods are set up with. */
  cniConfFile: string;
  dockerRequests(): number;
}

type Record4 = (what: string, crishim: string, raw: string, ratio: string) => void;

const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/** `docker stop`, where "already stopped" (304) is no error. */
export const stopQuietly = (docker: Docker, id: string, t: number): Promise<unknown> =>
  docker
    .getContainer(id)
    .stop({ t })
    .catch((err: { statusCode?: number }) => {
      if (err.statusCode !== 304) throw err;
    });

export async function stopPod(t: StopPodTarget, docker: Docker, pods: number, record: Record4): Promise<void> {
  const conf = readConfList(t.cniConfFile);
  const viaCri: number[] = [];
  const raw: number[] = [];
  const requests: number[] = [];
  const ids: string[] = [];
  try {
    for (let i = 0; i < pods; i++) ids.push(await t.runPod());
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (i % 2 === 0) {
        const before = t.dockerRequests();
        const t0 = now();
        await t.call('StopPodSandbox', { pod_sandbox_id: id });
        viaCri.push(now() - t0);
        requests.push(t.dockerRequests() - before);
      } else {
        const pid = (await docker.getContainer(id).inspect()).State.Pid;
        const members = await docker.listContainers({
          all: true,
          filters: { label: [`io.kubernetes.sandbox.id=${id}`] },
        });
        const t0 = now();
        await Promise.all([...members.map((m) => stopQuietly(docker, m.Id, 0)), cniDel(conf, id, pid)]);
        await stopQuietly(docker, id, 10);
        raw.push(now() - t0);
      }
    }
  } finally {
    // RemovePodSandbox stops what is still running and repeats the (idempotent) CNI DEL
    for (const id of ids) await t.call('RemovePodSandbox', { pod_sandbox_id: id }).catch(() => undefined);
  }
  record(
    `StopPodSandbox p50 / p95 of ${viaCri.length} pods (docker calls per RPC: ${pct(requests, 50)}) vs stop + CNI DEL`,
    `${pct(viaCri, 50).toFixed(1)} / ${pct(viaCri, 95).toFixed(1)} ms`,
    `${pct(raw, 50).toFixed(1)} / ${pct(raw, 95).toFixed(1)} ms`,
    (pct(viaCri, 50) / pct(raw, 50)).toFixed(2),
  );
}
