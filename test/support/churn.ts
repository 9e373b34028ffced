/**
 * The churn runner: against a running crishim, makes pods and then changes them
 * behind crishim's back with the Docker API (what `docker kill`, `docker rm -f`,
 * `docker stop` of a pause container and `docker create/start` of a container
 * carrying CRI labels do), and checks what issue 11 asks of the state view and
 * of GetContainerEvents:
 *  - List and Status reflect each change in a read issued at most 200 ms after
 *    Docker confirmed it (each change's lag is measured and reported);
 *  - every container's events arrive exactly once and in lifecycle order, and
 *    the statuses they carry never show a container earlier than the event says
 *    (nor earlier than an earlier event showed it).
 * Used by the `churn` bench section (50 runs) and by test/e2e/churn.test.ts.
 */
import type * as grpc from '@grpc/grpc-js';
import type Docker from 'dockerode';
import { call } from '../e2e/harness';
import type { RuntimeServiceClient } from '../../src/generated/runtime/v1/RuntimeService';
import type { ContainerEventResponse__Output } from '../../src/generated/runtime/v1/ContainerEventResponse';

/** The bound issue 11 sets: a change Docker confirmed shows in any List or Status issued this long after. */
export const VISIBLE_WITHIN_MS = 200;
/** The lifecycle every container of a run goes through, whoever drives it. */
const LIFECYCLE = ['CREATED', 'STARTED', 'STOPPED', 'DELETED'];

export interface ChurnTarget {
  runtime: RuntimeServiceClient;
  /** The engine crishim talks to (the changes behind its back go there). */
  docker: Docker;
  /** A busybox image that engine has. */
  image: string;
  /** Host-network pods (no CNI): the churn is about the view, not about networking. */
  hostNetwork?: boolean;
  /** When set, each run restarts the Docker Engine in the middle (its containers die with it). */
  restartDocker?: () => Promise<void>;
}

export interface ChurnRun {
  ok: boolean;
  problems: string[];
  /** What each change was and how long after Docker confirmed it the first right List + Status was issued (ms). */
  lags: Array<{ change: string; ms: number }>;
  /** Containers (sandboxes included) whose events were checked. */
  containers: number;
  events: number;
}

export interface ChurnSession {
  run(): Promise<ChurnRun>;
  close(): void;
}

type Ev = ContainerEventResponse__Output;
interface Pod {
  id: string;
  config: Record<string, unknown>;
  long: string;
  short: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const short = (id: string): string => id.slice(0, 12);
const kind = (e: Ev): string => e.container_event_type.replace(/^CONTAINER_|_EVENT$/g, '');

let seq = 0;
function podConfig(hostNetwork: boolean): Record<string, unknown> {
  seq++;
  const uid = `churn-${process.pid}-${Date.now()}-${seq}`;
  return {
    metadata: { name: `churn-${seq}`, namespace: 'crishim-churn', uid, attempt: 0 },
    hostname: `churn-${seq}`,
    labels: { 'crishim-churn': 'true' },
    linux: hostNetwork ? { security_context: { namespace_options: { network: 'NODE' } } } : {},
  };
}

/**
 * Opens a GetContainerEvents stream and waits until crishim's own Docker
 * subscription is live (a probe pod's STARTED event arrived): from then on no
 * event may be missing, so every run's check is exact.
 */
export async function openChurn(t: ChurnTarget): Promise<ChurnSession> {
  const events: Ev[] = [];
  let streamError: Error | undefined;
  const stream = t.runtime.GetContainerEvents({});
  stream.on('data', (e: Ev) => events.push(e));
  stream.on('error', (err: grpc.ServiceError) => {
    if (err.code !== 1 /* CANCELLED: our close() */) streamError = err;
  });
  const probeConfig = podConfig(true);
  const probe = (await call(t.runtime, 'RunPodSandbox', { config: probeConfig })).pod_sandbox_id;
  try {
    await until(
      'the probe pod’s STARTED event',
      () => events.some((e) => e.container_id === probe && kind(e) === 'STARTED'),
      20_000,
    );
  } finally {
    await call(t.runtime, 'StopPodSandbox', { pod_sandbox_id: probe });
    await call(t.runtime, 'RemovePodSandbox', { pod_sandbox_id: probe });
  }
  return {
    run: () => churnRun(t, events, () => streamError),
    close: () => stream.cancel(),
  };
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** What List and Status say about the ids a run tracks. */
interface Seen {
  containers: Map<string, string>;
  sandboxes: Map<string, string>;
}

async function churnRun(t: ChurnTarget, allEvents: Ev[], streamError: () => Error | undefined): Promise<ChurnRun> {
  const firstEvent = allEvents.length;
  const problems: string[] = [];
  const lags: ChurnRun['lags'] = [];
  const ids = new Set<string>();
  const pods: Pod[] = [];

  const listed = async (): Promise<Seen> => {
    const [cs, ss] = await Promise.all([call(t.runtime, 'ListContainers', {}), call(t.runtime, 'ListPodSandbox', {})]);
    return {
      containers: new Map(cs.containers.map((c) => [c.id, c.state])),
      sandboxes: new Map(ss.items.map((s) => [s.id, s.state])),
    };
  };
  const containerStatus = (id: string): Promise<string> =>
    call(t.runtime, 'ContainerStatus', { container_id: id }).then(
      (r) => `${r.status?.state ?? 'none'}${r.status?.state === 'CONTAINER_EXITED' ? `(${r.status.exit_code})` : ''}`,
      (err: grpc.ServiceError) => (err.code === 5 ? 'absent' : `error ${err.details}`),
    );
  const sandboxStatus = (id: string): Promise<string> =>
    call(t.runtime, 'PodSandboxStatus', { pod_sandbox_id: id }).then(
      (r) => r.status?.state ?? 'none',
      (err: grpc.ServiceError) => (err.code === 5 ? 'absent' : `error ${err.details}`),
    );

  /**
   * Reads List and Status until they show `want` (id -> state; 'absent' for
   * gone). The lag is when the first right read was issued, counted from Docker's
   * confirmation `since`; a read issued VISIBLE_WITHIN_MS after it that is still
   * wrong is a failure. Polling (not one read at 200 ms) is what measures the lag.
   */
  const expectSeen = async (
    change: string,
    since: number,
    want: Array<{ id: string; sandbox?: boolean; list: string; status: string }>,
  ): Promise<void> => {
    for (;;) {
      const issued = now() - since;
      const [seen, statuses] = await Promise.all([
        listed(),
        Promise.all(want.map((w) => (w.sandbox ? sandboxStatus(w.id) : containerStatus(w.id)))),
      ]);
      const wrong = want
        .map((w, i) => {
          const inList = (w.sandbox ? seen.sandboxes : seen.containers).get(w.id) ?? 'absent';
          return inList === w.list && statuses[i] === w.status
            ? ''
            : `${short(w.id)} list ${inList} status ${statuses[i]} (want ${w.list}, ${w.status})`;
        })
        .filter(Boolean);
      if (wrong.length === 0) {
        lags.push({ change, ms: Math.max(0, issued) });
        return;
      }
      if (issued >= VISIBLE_WITHIN_MS) {
        problems.push(
          `${change}: a read issued ${issued.toFixed(0)} ms after Docker confirmed it saw ${wrong.join('; ')}`,
        );
        lags.push({ change, ms: issued });
        return;
      }
      await sleep(5);
    }
  };

  const newPod = async (): Promise<Pod> => {
    const config = podConfig(t.hostNetwork ?? true);
    const { pod_sandbox_id: id } = await call(t.runtime, 'RunPodSandbox', { config });
    ids.add(id);
    const make = async (name: string, command: string[]): Promise<string> => {
      const { container_id: c } = await call(t.runtime, 'CreateContainer', {
        pod_sandbox_id: id,
        config: { metadata: { name, attempt: 0 }, image: { image: t.image }, command },
        sandbox_config: config,
      });
      ids.add(c);
      await call(t.runtime, 'StartContainer', { container_id: c });
      return c;
    };
    const pod = { id, config, long: await make('long', ['sleep', '3600']), short: await make('short', ['true']) };
    pods.push(pod);
    // the short one exits by itself: Docker's wait answering is the confirmation
    await t.docker.getContainer(pod.short).wait();
    await expectSeen('exit at once', now(), [
      { id: pod.short, list: 'CONTAINER_EXITED', status: 'CONTAINER_EXITED(0)' },
    ]);
    return pod;
  };

  const dockerKill = async (p: Pod): Promise<void> => {
    await t.docker.getContainer(p.long).kill();
    // kill answers once the signal is sent; the change is done when Docker says it exited
    await t.docker.getContainer(p.long).wait();
    await expectSeen('docker kill', now(), [{ id: p.long, list: 'CONTAINER_EXITED', status: 'CONTAINER_EXITED(137)' }]);
  };
  const dockerRmF = async (p: Pod): Promise<void> => {
    await t.docker.getContainer(p.long).remove({ force: true });
    await expectSeen('docker rm -f', now(), [{ id: p.long, list: 'absent', status: 'absent' }]);
  };
  const dockerStopPause = async (p: Pod): Promise<void> => {
    await t.docker.getContainer(p.id).stop({ t: 1 });
    await expectSeen('docker stop of the pause container', now(), [
      { id: p.id, sandbox: true, list: 'SANDBOX_NOTREADY', status: 'SANDBOX_NOTREADY' },
    ]);
  };
  /** A container with the pod's CRI labels made by hand (an operator copying one): created, started, removed. */
  const foreign = async (p: Pod): Promise<void> => {
    const labels = (
      await t.docker
        .getContainer(p.long)
        .inspect()
        .catch(() => t.docker.getContainer(p.short).inspect())
    ).Config.Labels;
    const c = await t.docker.createContainer({
      Image: t.image,
      Cmd: ['sleep', '3600'],
      Labels: { ...labels, 'io.kubernetes.container.name': 'by-hand' },
      HostConfig: { NetworkMode: `container:${p.id}` },
    });
    ids.add(c.id);
    await expectSeen('docker create', now(), [{ id: c.id, list: 'CONTAINER_CREATED', status: 'CONTAINER_CREATED' }]);
    await c.start();
    await expectSeen('docker start', now(), [{ id: c.id, list: 'CONTAINER_RUNNING', status: 'CONTAINER_RUNNING' }]);
    await c.remove({ force: true });
    await expectSeen('docker rm -f of a running container', now(), [{ id: c.id, list: 'absent', status: 'absent' }]);
  };

  try {
    for (let i = 0; i < 3; i++) await newPod();
    await dockerKill(pods[0]);
    let last = pods[2];
    if (t.restartDocker) {
      await t.restartDocker();
      await restartedView(t, pods, listed, containerStatus, problems);
      last = await newPod();
    }
    await dockerRmF(pods[1]);
    await foreign(last);
    await dockerStopPause(last);
  } catch (err) {
    problems.push(`churn step failed: ${(err as Error).message}`);
  } finally {
    for (const p of pods) {
      await call(t.runtime, 'StopPodSandbox', { pod_sandbox_id: p.id }).catch((err: Error) =>
        problems.push(`StopPodSandbox ${short(p.id)}: ${err.message}`),
      );
      await call(t.runtime, 'RemovePodSandbox', { pod_sandbox_id: p.id }).catch((err: Error) =>
        problems.push(`RemovePodSandbox ${short(p.id)}: ${err.message}`),
      );
    }
  }
  const after = await listed().catch(() => undefined);
  const left = [...ids].filter((id) => after?.containers.has(id) || after?.sandboxes.has(id));
  if (left.length > 0) problems.push(`still listed after RemovePodSandbox: ${left.map(short).join(', ')}`);

  // every container ends deleted; then a little longer, so a late duplicate would be caught
  const mine = (): Ev[] => allEvents.slice(firstEvent).filter((e) => ids.has(e.container_id));
  await until(
    'every DELETED event',
    () => [...ids].every((id) => mine().some((e) => e.container_id === id && kind(e) === 'DELETED')),
    20_000,
  ).catch(() => undefined);
  await sleep(300);
  const evs = mine();
  problems.push(...checkEvents(evs, ids, new Set(pods.map((p) => p.id))));
  const err = streamError();
  if (err) problems.push(`GetContainerEvents stream failed: ${err.message}`);
  return { ok: problems.length === 0, problems, lags, containers: ids.size, events: evs.length };
}

/**
 * After a Docker restart every container of the run died with the engine: the
 * first List and Status that succeed must already say so (no stale answer from
 * before the restart); while crishim has not reconnected they may only fail.
 */
async function restartedView(
  t: ChurnTarget,
  pods: Pod[],
  listed: () => Promise<Seen>,
  containerStatus: (id: string) => Promise<string>,
  problems: string[],
): Promise<void> {
  let seen: Seen | undefined;
  await until(
    'a List that succeeds after the Docker restart',
    async () => (seen = await listed().catch(() => undefined)) !== undefined,
    30_000,
  );
  const s = seen as Seen;
  for (const p of pods) {
    const sandbox = s.sandboxes.get(p.id);
    if (sandbox !== 'SANDBOX_NOTREADY')
      problems.push(`after the Docker restart ${short(p.id)} is listed ${sandbox ?? 'absent'}, not SANDBOX_NOTREADY`);
    for (const c of [p.long, p.short]) {
      const got = s.containers.get(c);
      if (got !== 'CONTAINER_EXITED')
        problems.push(`after the Docker restart ${short(c)} is listed ${got ?? 'absent'}, not CONTAINER_EXITED`);
      const st = await containerStatus(c);
      if (!st.startsWith('CONTAINER_EXITED'))
        problems.push(`after the Docker restart ContainerStatus ${short(c)} is ${st}`);
    }
  }
}

/** How far along its lifecycle a status shows a container (absent: removed). */
const CONTAINER_RANK: Record<string, number> = { CONTAINER_CREATED: 0, CONTAINER_RUNNING: 1, CONTAINER_EXITED: 2 };
const SANDBOX_RANK: Record<string, number> = { SANDBOX_READY: 1, SANDBOX_NOTREADY: 2 };
const EVENT_RANK: Record<string, number> = { CREATED: 0, STARTED: 1, STOPPED: 2, DELETED: 3 };
const ABSENT = 3;

/**
 * Exactly once and in order: each container's events are the lifecycle.
 * Statuses that match: an event's status of its own container is at least as far
 * along as the event (a STOPPED event may not show it running), and once a
 * container's own CREATED event was seen no later event shows it earlier than a
 * previous one did; a container's DELETED event no longer lists it. A sandbox's
 * status is checked from its STARTED event on (a created pause container
 * already reads NOTREADY).
 */
export function checkEvents(evs: Ev[], ids: Set<string>, sandboxes: Set<string>): string[] {
  const problems: string[] = [];
  for (const id of ids) {
    const seq = evs.filter((e) => e.container_id === id).map(kind);
    if (seq.join() !== LIFECYCLE.join())
      problems.push(
        `events of ${short(id)}${sandboxes.has(id) ? ' (sandbox)' : ''}: ${seq.join(', ') || 'none'}, want ${LIFECYCLE.join(', ')}`,
      );
  }
  const furthest = new Map<string, number>();
  for (const e of evs) {
    const k = kind(e);
    const own = sandboxes.has(e.container_id)
      ? e.pod_sandbox_status?.id === e.container_id
        ? (SANDBOX_RANK[e.pod_sandbox_status.state] ?? -1)
        : ABSENT
      : (() => {
          const s = e.containers_statuses.find((c) => c.id === e.container_id);
          return s ? (CONTAINER_RANK[s.state] ?? -1) : ABSENT;
        })();
    const sandbox = sandboxes.has(e.container_id);
    const sandboxCreated = sandbox && k === 'CREATED';
    // a sandbox's DELETED event may still carry its (NOTREADY) status: the kubelet's evented PLEG
    // reads the pod from it; a container's may not list the removed container
    const least = sandbox && k === 'DELETED' ? SANDBOX_RANK.SANDBOX_NOTREADY : EVENT_RANK[k];
    if (!sandboxCreated && own < least)
      problems.push(
        `${k} event of ${short(e.container_id)}${sandbox ? ' (sandbox)' : ''} carries an earlier status (rank ${own})`,
      );
    if (!sandboxCreated && own < (furthest.get(e.container_id) ?? -1))
      problems.push(`${k} event of ${short(e.container_id)} shows it behind an earlier event`);
    if (!sandboxCreated) furthest.set(e.container_id, Math.max(furthest.get(e.container_id) ?? -1, own));
    // the other members' statuses in the same event: never behind what an earlier event showed
    for (const s of e.containers_statuses) {
      if (s.id === e.container_id || !furthest.has(s.id)) continue;
      const r = CONTAINER_RANK[s.state] ?? -1;
      if (r < (furthest.get(s.id) ?? -1))
        problems.push(
          `${k} event of ${short(e.container_id)} shows ${short(s.id)} ${s.state}, behind an earlier event`,
        );
      furthest.set(s.id, Math.max(furthest.get(s.id) ?? -1, r));
    }
  }
  return problems;
}

/** One line per run: passed or what went wrong, and the worst lag. */
export function describeRun(i: number, r: ChurnRun): string {
  const worst = r.lags.reduce((a, l) => (l.ms > a.ms ? l : a), { change: 'none', ms: 0 });
  const head = `run ${i}: ${r.ok ? 'passed' : 'FAILED'}, ${r.lags.length} changes, ${r.containers} containers, ${r.events} events, worst lag ${worst.ms.toFixed(1)} ms (${worst.change})`;
  return r.ok ? head : `${head}\n  ${r.problems.join('\n  ')}`;
}
