import { applyAction, diffSnapshots, phaseOf, snapshotOf, type Snapshot } from '../../src/events/snapshot';
import { SANDBOX_ID_LABEL, TYPE_LABEL, TYPE_CONTAINER, TYPE_SANDBOX } from '../../src/labels';

const pod = (id: string, State: string) => ({ Id: id, State, Labels: { [TYPE_LABEL]: TYPE_SANDBOX, unrelated: 'x' } });
const ctr = (id: string, State: string, sandbox = 'p1') => ({
  Id: id,
  State,
  Labels: { [TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: sandbox },
});
const actions = (prev: Snapshot, next: Snapshot): string[] =>
  diffSnapshots(prev, next).map((e) => `${e.id}:${e.action}`);

describe('container event snapshots', () => {
  it('maps docker states to lifecycle phases', () => {
    expect(['created', 'running', 'paused', 'restarting', 'exited', 'dead', 'removing'].map(phaseOf)).toEqual([
      'created',
      'running',
      'running',
      'running',
      'exited',
      'exited',
      'exited',
    ]);
  });

  it('keeps only the labels an event conversion needs', () => {
    expect(snapshotOf([pod('p1', 'running')]).get('p1')).toEqual({
      phase: 'running',
      labels: { [TYPE_LABEL]: TYPE_SANDBOX },
    });
  });

  it('synthesizes nothing when nothing changed', () => {
    const s = snapshotOf([pod('p1', 'running'), ctr('c1', 'exited')]);
    expect(diffSnapshots(s, snapshotOf([pod('p1', 'running'), ctr('c1', 'exited')]))).toEqual([]);
  });

  it('reports containers that died during a docker restart, containers before their sandbox', () => {
    const prev = snapshotOf([pod('p1', 'running'), ctr('c1', 'running'), ctr('c2', 'exited')]);
    const next = snapshotOf([pod('p1', 'exited'), ctr('c1', 'exited'), ctr('c2', 'exited')]);
    expect(actions(prev, next)).toEqual(['c1:die', 'p1:die']);
  });

  it('reports removals as stop then delete, and a removed exited container as delete only', () => {
    const prev = snapshotOf([pod('p1', 'running'), ctr('c1', 'running'), ctr('c2', 'exited')]);
    expect(actions(prev, snapshotOf([]))).toEqual(['c1:die', 'c1:destroy', 'c2:destroy', 'p1:die', 'p1:destroy']);
  });

  it('reports new containers in lifecycle order, sandboxes first, after the removals', () => {
    const prev = snapshotOf([ctr('old', 'exited')]);
    const next = snapshotOf([ctr('c1', 'exited', 'p2'), ctr('c2', 'created', 'p2'), pod('p2', 'running')]);
    expect(actions(prev, next)).toEqual([
      'old:destroy',
      'p2:create',
      'p2:start',
      'c1:create',
      'c1:start',
      'c1:die',
      'c2:create',
    ]);
  });

  it('reports starts of known containers, and a start+stop of a created one', () => {
    const prev = snapshotOf([ctr('c1', 'created'), ctr('c2', 'created'), ctr('c3', 'exited')]);
    const next = snapshotOf([ctr('c1', 'running'), ctr('c2', 'exited'), ctr('c3', 'running')]);
    expect(actions(prev, next)).toEqual(['c1:start', 'c2:start', 'c2:die', 'c3:start']);
  });

  it('carries the labels the event conversion reads, from the last snapshot for removed containers', () => {
    const [ev] = diffSnapshots(snapshotOf([ctr('c1', 'exited', 'p9')]), snapshotOf([]));
    expect(ev.labels).toEqual({ [TYPE_LABEL]: TYPE_CONTAINER, [SANDBOX_ID_LABEL]: 'p9' });
  });
});

describe('live events against the snapshot', () => {
  it('tells replayed events (already in the snapshot) from new ones', () => {
    const s = snapshotOf([ctr('c1', 'running')]);
    expect(applyAction(s, 'c1', 'create', {})).toBe(false);
    expect(applyAction(s, 'c1', 'start', {})).toBe(false);
    expect(applyAction(s, 'c1', 'die', {})).toBe(true);
    expect(s.get('c1')?.phase).toBe('exited');
    expect(applyAction(s, 'c1', 'start', {})).toBe(true);
    expect(applyAction(s, 'c1', 'destroy', {})).toBe(true);
    expect(applyAction(s, 'c1', 'destroy', {})).toBe(false);
    expect(applyAction(s, 'c2', 'create', { [TYPE_LABEL]: TYPE_CONTAINER, other: 'y' })).toBe(true);
    expect(s.get('c2')).toEqual({ phase: 'created', labels: { [TYPE_LABEL]: TYPE_CONTAINER } });
    expect(applyAction(s, 'c2', 'exec_start: sh', {})).toBe(true);
  });

  it('starts tracking a container first seen by its start or die (its create was missed)', () => {
    const s = snapshotOf([]);
    expect(applyAction(s, 'c3', 'start', { [TYPE_LABEL]: TYPE_CONTAINER })).toBe(true);
    expect(s.get('c3')).toEqual({ phase: 'running', labels: { [TYPE_LABEL]: TYPE_CONTAINER } });
    expect(applyAction(s, 'c4', 'die', {})).toBe(true);
    expect(s.get('c4')?.phase).toBe('exited');
    // so that a later outage reports its removal
    expect(diffSnapshots(s, snapshotOf([])).map((e) => `${e.id}:${e.action}`)).toEqual([
      'c3:die',
      'c3:destroy',
      'c4:destroy',
    ]);
  });

  it('after applying the diff, the previous snapshot equals the new one', () => {
    const prev = snapshotOf([pod('p1', 'running'), ctr('c1', 'running'), ctr('c2', 'created')]);
    const next = snapshotOf([pod('p1', 'running'), ctr('c2', 'exited'), ctr('c3', 'running')]);
    for (const e of diffSnapshots(prev, next)) expect(applyAction(prev, e.id, e.action, e.labels)).toBe(true);
    expect(prev).toEqual(next);
  });
});
