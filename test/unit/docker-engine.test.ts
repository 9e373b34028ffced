import { PassThrough, Writable } from 'stream';
import { demuxFrames, demuxInto, FrameParser } from '../../src/docker/demux';
import { DockerUnreachableError, fromDockerError } from '../../src/docker/errors';
import { instrumentEngine } from '../../src/docker/instrumented-engine';
import { DomainError } from '../../src/errors';
import { createLogger } from '../../src/logging/logger';
import { observeMutations } from '../../src/state/mutations';
import { FakeEngine, frame, inspectInfo } from '../support/fake-engine';

const logger = createLogger('error', 'json');

describe('FakeEngine', () => {
  it('moves containers through Docker states and finds them by id, prefix and name', async () => {
    const e = new FakeEngine();
    const id = await e.createContainer({ name: 'k8s_a', Image: 'busybox', Labels: { x: '1' } });
    expect((await e.inspectContainer('k8s_a')).Id).toBe(id);
    expect((await e.inspectContainer(id.slice(0, 12))).State.Status).toBe('created');
    await e.startContainer(id);
    expect((await e.inspectContainer(id)).State.Running).toBe(true);
    await e.stopContainer(id, 10);
    await e.stopContainer(id, 10); // already stopped: success
    expect((await e.inspectContainer(id)).State.Status).toBe('exited');
    expect((await e.listContainers({ label: ['x=1'] })).map((c) => c.Id)).toEqual([id]);
    expect(await e.listContainers({ label: ['x=2'] })).toEqual([]);
    await e.removeContainer(id);
    await expect(e.inspectContainer(id)).rejects.toMatchObject({ kind: 'not-found' });
    expect(await e.findContainer(id)).toBeUndefined();
    await e.removeContainer(id, { missingOk: true });
    await expect(e.removeContainer(id)).rejects.toMatchObject({ kind: 'not-found' });
    await expect(e.stopContainer(id, 1)).rejects.toMatchObject({ kind: 'not-found' });
    await e.stopContainer(id, 1, { missingOk: true });
  });

  it('refuses to remove a running container unless forced', async () => {
    const e = new FakeEngine();
    const id = await e.createContainer({ name: 'r' });
    await e.startContainer(id);
    await expect(e.removeContainer(id)).rejects.toMatchObject({ kind: 'failed-precondition' });
    await e.removeContainer(id, { force: true });
    expect(e.containers.size).toBe(0);
  });

  it('fails injected calls once, or as a predicate decides', async () => {
    const e = new FakeEngine();
    const id = e.addContainer(inspectInfo({ Name: '/one' }));
    e.fail('inspectContainer', new DomainError('unavailable', 'down'));
    await expect(e.inspectContainer(id)).rejects.toThrow('down');
    await expect(e.inspectContainer(id)).resolves.toMatchObject({ Id: id });
    e.fail('startContainer', (args) => (args[0] === 'other' ? new Error('no') : undefined));
    await e.startContainer(id);
    await expect(e.startContainer('other')).rejects.toThrow('no');
    expect(e.count('startContainer')).toBe(2);
  });

  it('streams events that match the subscription filters', async () => {
    const e = new FakeEngine();
    const s = await e.events({ filters: { type: ['container'] } });
    const lines: string[] = [];
    s.on('data', (b: Buffer) => lines.push(b.toString()));
    e.emit({ Type: 'image', Action: 'pull' });
    const id = await e.createContainer({ name: 'ev' });
    await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => JSON.parse(l) as { Action: string; Actor: { ID: string } })).toEqual([
      expect.objectContaining({ Action: 'create', Actor: expect.objectContaining({ ID: id }) }),
    ]);
  });

  it('pulls, lists, inspects and removes images', async () => {
    const e = new FakeEngine();
    const seen: string[] = [];
    e.pullScript = { progress: [{ status: 'Downloading' }] };
    await e.pullImage('busybox:1', {}, (p) => seen.push(p.status ?? ''));
    expect(seen).toEqual(['Downloading']);
    const img = await e.inspectImage('busybox:1');
    expect((await e.listImages()).map((i) => i.Id)).toEqual([img.Id]);
    expect(await e.removeImage('busybox:1')).toEqual([{ Untagged: 'busybox:1' }, { Deleted: img.Id }]);
    await expect(e.inspectImage('busybox:1')).rejects.toMatchObject({ kind: 'not-found' });
  });
});

describe('engine errors', () => {
  it("keep their kind and Docker's words when a caller names the step they failed", async () => {
    const e = new FakeEngine();
    const err: unknown = await e.startContainer('gone').catch((x: unknown) => x);
    expect(err).toMatchObject({ kind: 'not-found', message: 'start container gone: no such object' });
    expect(fromDockerError(err, 'RunPodSandbox ns/web: start pause container')).toMatchObject({
      kind: 'not-found',
      message: 'RunPodSandbox ns/web: start pause container: no such object',
    });
    const down = fromDockerError(
      new DockerUnreachableError('docker daemon unreachable (ENOENT)', 'ping docker'),
      'Status',
    );
    expect(down).toBeInstanceOf(DockerUnreachableError);
    expect(down.message).toBe('Status: docker daemon unreachable (ENOENT)');
  });
});

describe('name conflict policy', () => {
  const labelled = (status: string, owner: string) =>
    inspectInfo({ Name: '/taken', State: { Status: status }, Config: { Labels: { owner } } });

  it('fail: already-exists naming the holder', async () => {
    const e = new FakeEngine();
    const holder = e.addContainer(labelled('created', 'us'));
    await expect(e.createContainer({ name: 'taken' })).rejects.toMatchObject({
      kind: 'already-exists',
      message: expect.stringContaining(holder),
    });
  });

  it('reclaim: removes a leftover the predicate calls ours, and keeps any other holder', async () => {
    const e = new FakeEngine();
    const leftover = e.addContainer(labelled('created', 'us'));
    const removed: string[] = [];
    const policy = {
      kind: 'reclaim' as const,
      isLeftover: (h: { Config: { Labels: Record<string, string> } }) => h.Config.Labels.owner === 'us',
      onRemoved: (id: string) => removed.push(id),
    };
    const id = await e.createContainer({ name: 'taken' }, { onConflict: policy });
    expect(id).not.toBe(leftover);
    expect(removed).toEqual([leftover]);
    expect(e.containers.has(leftover)).toBe(false);

    const other = new FakeEngine();
    const theirs = other.addContainer(labelled('created', 'them'));
    await expect(other.createContainer({ name: 'taken' }, { onConflict: policy })).rejects.toMatchObject({
      kind: 'already-exists',
    });
    expect(other.containers.has(theirs)).toBe(true);
  });

  it('suffix: retries once under the new name', async () => {
    const e = new FakeEngine();
    e.addContainer(labelled('running', 'them'));
    const retried: string[] = [];
    const id = await e.createContainer(
      { name: 'taken' },
      { onConflict: { kind: 'suffix', rename: (n) => `${n}_2`, onRetry: (n) => retried.push(n) } },
    );
    expect(retried).toEqual(['taken_2']);
    expect((await e.inspectContainer(id)).Name).toBe('/taken_2');
  });
});

describe('instrumentEngine', () => {
  it('reports each call as its Engine API route, and unreachable failures', async () => {
    const e = new FakeEngine();
    const id = e.addContainer(inspectInfo());
    const seen: string[] = [];
    const unreachable: string[] = [];
    const wrapped = instrumentEngine(e, logger, {
      onRequest: (method, route, seconds, err) => seen.push(`${method} ${route} ${seconds >= 0} ${err ? 'err' : 'ok'}`),
      onUnreachable: (err) => unreachable.push(err.message),
    });
    await wrapped.inspectContainer(id);
    e.fail('listContainers', new DockerUnreachableError('list containers: docker daemon unreachable'));
    await expect(wrapped.listContainers()).rejects.toBeInstanceOf(DockerUnreachableError);
    e.fail('stopContainer', new DomainError('unavailable', 'a registry, not dockerd'));
    await expect(wrapped.stopContainer(id, 1)).rejects.toThrow('registry');
    expect(seen).toEqual([
      'GET /containers/{id}/json true ok',
      'GET /containers/json true err',
      'POST /containers/{id}/stop true err',
    ]);
    expect(unreachable).toEqual(['list containers: docker daemon unreachable']);
  });
});

describe('observeMutations', () => {
  it('reports containers that crishim created, changed, removed or reclaimed', async () => {
    const e = new FakeEngine();
    const leftover = e.addContainer(inspectInfo({ Name: '/n' }));
    const told: string[] = [];
    const engine = observeMutations(e, {
      changing: (ref) => {
        told.push(`changing ${ref}`);
        return () => told.push(`answered ${ref}`);
      },
      changed: (ref, brings) => told.push(`changed ${ref} [${brings.join(' ')}]`),
      removed: (ref) => told.push(`removed ${ref}`),
    });
    const id = await engine.createContainer({ name: 'n' }, { onConflict: { kind: 'reclaim', isLeftover: () => true } });
    await engine.startContainer(id);
    await engine.inspectContainer(id);
    await engine.stopContainer(id, 1);
    await expect(engine.killContainer('nope')).rejects.toMatchObject({ kind: 'not-found' });
    await expect(engine.removeContainer('nope')).rejects.toMatchObject({ kind: 'not-found' });
    await engine.removeContainer(id, { force: true });
    // a failed call brings no events: whatever comes of it is inspected; a call on a known
    // container is told before it goes to Docker and at its answer, before what it changed
    expect(told).toEqual([
      `removed ${leftover}`,
      `changed ${id} [create]`,
      `changing ${id}`,
      `answered ${id}`,
      `changed ${id} [start]`,
      `changing ${id}`,
      `answered ${id}`,
      `changed ${id} [die stop]`,
      'changing nope',
      'answered nope',
      'changed nope []',
      'changing nope',
      'answered nope',
      'changed nope []',
      `changing ${id}`,
      `answered ${id}`,
      `removed ${id}`,
    ]);
  });
});

describe('demux', () => {
  it('splits frames cut anywhere, in order, by stream', () => {
    const got: string[] = [];
    const p = new FrameParser((s, payload) => got.push(`${s}:${payload.toString()}`));
    const all = Buffer.concat([frame(1, 'out1'), frame(2, 'err'), frame(1, 'out2')]);
    for (let i = 0; i < all.length; i += 5) p.push(all.subarray(i, i + 5));
    expect(got).toEqual(['stdout:out1', 'stderr:err', 'stdout:out2']);
  });

  it('yields frames for awaiting writers and writes them into sinks', async () => {
    const src = new PassThrough();
    src.end(Buffer.concat([frame(2, 'e'), frame(1, 'o')]));
    const frames: string[] = [];
    for await (const f of demuxFrames(src)) frames.push(`${f.stream}:${f.payload.toString()}`);
    expect(frames).toEqual(['stderr:e', 'stdout:o']);

    const out: string[] = [];
    const sink = (tag: string): Writable =>
      new Writable({ write: (c: Buffer, _e, cb) => (out.push(`${tag}${c.toString()}`), cb()) });
    const live = new PassThrough();
    demuxInto(live, sink('1:'), sink('2:'));
    live.end(Buffer.concat([frame(1, 'a'), frame(2, 'b')]));
    await new Promise((r) => live.on('end', r));
    expect(out).toEqual(['1:a', '2:b']);
  });
});
