/**
 * The `churn` section: issue 11's correctness target, run many times. Each run
 * (test/support/churn.ts) makes three pods of two containers, changes them
 * behind crishim's back with the Docker API, and checks that List and Status
 * show every change within 200 ms of Docker confirming it and that
 * GetContainerEvents reports every transition once, in order, with statuses
 * that match. Prints each run, then runs passed / failed and the lag figures.
 */
import type { ChildProcess } from 'child_process';
import { rm } from 'fs/promises';
import type Docker from 'dockerode';
import { describeRun, openChurn, VISIBLE_WITHIN_MS, type ChurnSession, type ChurnTarget } from '../test/support/churn';
import { startPrivateDockerd } from '../test/support/private-dockerd';
import { pct } from './measure';

type Record4 = (what: string, crishim: string, raw: string, ratio: string) => void;

export async function churn(
  target: Omit<ChurnTarget, 'docker'>,
  docker: Docker,
  runs: number,
  record: Record4,
): Promise<void> {
  const session = await openChurn({ ...target, docker });
  const lags: number[] = [];
  const listMs: number[] = [];
  let passed = 0;
  try {
    for (let i = 1; i <= runs; i++) {
      const r = await session.run();
      if (r.ok) passed++;
      lags.push(...r.lags.map((l) => l.ms));
      process.stderr.write(describeRun(i, r) + '\n');
      // the same-run baseline: what one raw Docker list of our containers costs, the floor of any lag
      const t0 = process.hrtime.bigint();
      await docker.listContainers({ all: true, filters: { label: ['io.kubernetes.docker.type'] } });
      listMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  } finally {
    session.close();
  }
  record(
    `churn: runs passed (of ${runs})`,
    `${passed} passed, ${runs - passed} failed`,
    '-',
    passed === runs ? 'all' : 'FAILURES',
  );
  record(
    `churn: List/Status lag after a change (${lags.length} changes)`,
    `worst ${lags.length ? Math.max(...lags).toFixed(1) : '-'} ms, p99 ${pct(lags, 99).toFixed(1)} ms, p50 ${pct(lags, 50).toFixed(1)} ms`,
    `docker ps p50 ${pct(listMs, 50).toFixed(1)} ms`,
    `bound ${VISIBLE_WITHIN_MS} ms`,
  );
}

/** What churnAcrossRestarts needs of a crishim daemon started on another engine. */
interface RestartTarget {
  proc: ChildProcess;
  runtime: ChurnTarget['runtime'];
  dir: string;
  closeProxy(): void;
}

/**
 * The same runs with a restart of the Docker Engine in the middle of each: a private dockerd
 * (test/support/private-dockerd.ts), so the shared one is never touched, and a crishim of its
 * own pointed at it. Each run then checks the view and the events across the restart too.
 */
export async function churnAcrossRestarts(
  startDaemon: (dockerSocket: string) => Promise<RestartTarget>,
  from: Docker,
  image: string,
  runs: number,
  record: Record4,
): Promise<void> {
  const engine = await startPrivateDockerd({
    bridge: 'crishim-bchr',
    images: ['registry.k8s.io/pause:3.10', image],
    from,
  });
  let d: RestartTarget | undefined;
  let session: ChurnSession | undefined;
  let passed = 0;
  const lags: number[] = [];
  try {
    d = await startDaemon(engine.socketEndpoint.slice('unix://'.length));
    session = await openChurn({
      runtime: d.runtime,
      docker: engine.api,
      image,
      hostNetwork: true,
      restartDocker: () => engine.restart(),
    });
    for (let i = 1; i <= runs; i++) {
      const r = await session.run();
      if (r.ok) passed++;
      lags.push(...r.lags.map((l) => l.ms));
      process.stderr.write(`restart ${describeRun(i, r)}\n`);
    }
  } finally {
    session?.close();
    if (d) {
      d.runtime.close();
      d.proc.kill('SIGTERM');
      d.closeProxy();
      await rm(d.dir, { recursive: true, force: true });
    }
    await engine.close();
  }
  record(
    `churn with a dockerd restart in each run: runs passed (of ${runs})`,
    `${passed} passed, ${runs - passed} failed`,
    '-',
    passed === runs ? 'all' : 'FAILURES',
  );
  record(
    `churn with restarts: List/Status lag after a change (${lags.length} changes)`,
    `worst ${lags.length ? Math.max(...lags).toFixed(1) : '-'} ms, p50 ${pct(lags, 50).toFixed(1)} ms`,
    '-',
    `bound ${VISIBLE_WITHIN_MS} ms`,
  );
}
