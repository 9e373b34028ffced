import { createStatsViews } from '../../src/container/stats-views';
import type { ServiceDeps } from '../../src/service-deps';
import type { StatsCollector, Target } from '../../src/stats/collector';
import type { ContainerInfo } from '../../src/state/store';
import { inspectInfo } from '../support/fake-engine';

const app = (id: string, startedAt: string): ContainerInfo =>
  inspectInfo({
    Id: id,
    Name: `/k8s_app_web_default_uid_0`,
    State: { Status: 'running', Running: true, StartedAt: startedAt },
    Config: { Image: 'busybox', Labels: { 'io.kubernetes.docker.type': 'container' } },
  });

/** A collector that keeps the targets and the retained id sets it is handed, and reads nothing. */
function recordingCollector(): {
  collector: StatsCollector;
  handed: Target[][];
  retained: Array<ReadonlySet<string>>;
} {
  const handed: Target[][] = [];
  const retained: Array<ReadonlySet<string>> = [];
  const collector = {
    containers: async (targets: Target[]) => {
      handed.push(targets);
      return targets.map((t) => ({ id: t.id, timestamp: '0', usage: {} }));
    },
    retain: (ids: ReadonlySet<string>) => void retained.push(ids),
  } as unknown as StatsCollector;
  return { collector, handed, retained };
}

it("hands the collector the state view's current inspect of each container, across view changes", async () => {
  let view: readonly ContainerInfo[] = [app('a'.repeat(64), '2026-11-27T01:00:00Z')];
  const deps = {
    state: { list: async () => view },
    checkpoints: { list: async () => [] },
    engine: { current: () => ({}) },
  } as unknown as ServiceDeps;
  const { collector, handed, retained } = recordingCollector();
  const views = createStatsViews(deps, collector);
  const signal = new AbortController().signal;

  await views.containerViews(null, signal);
  await views.containerViews(null, signal);
  expect(handed[1][0].info).toBe(view[0]);
  // the same list: the same set, which tells the collector nothing needs forgetting
  expect(retained[1]).toBe(retained[0]);
  expect([...retained[0]]).toEqual(['a'.repeat(64)]);

  // the container restarted: the view answers a new array with its new inspect
  view = [app('a'.repeat(64), '2026-11-27T02:00:00Z'), app('b'.repeat(64), '2026-11-27T02:00:00Z')];
  await views.containerViews(null, signal);
  expect(handed[2].map((t) => t.info)).toEqual([view[0], view[1]]);
  expect(handed[2][0].info).toBe(view[0]);
  expect(handed[2][1].info?.State.StartedAt).toBe('2026-11-27T02:00:00Z');
  expect([...retained[2]]).toEqual(['a'.repeat(64), 'b'.repeat(64)]);
});
