import { mkdtempSync, writeFileSync } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { parseCompare, resolvePid } from '../../bench/cri-endpoint';
import { compareLifecycle, table, type LifecycleTarget } from '../../bench/runtime-compare';

describe('--compare', () => {
  it('keeps the colons of the endpoint and takes name and pid from the end', () => {
    expect(
      parseCompare([
        'node',
        'bench.js',
        '--compare=unix:///tmp/cmp/cri-dockerd.sock:cri-dockerd:1234,unix:///run/c.sock:containerd:/run/c.pid',
      ]),
    ).toEqual([
      { endpoint: 'unix:///tmp/cmp/cri-dockerd.sock', name: 'cri-dockerd', pid: '1234' },
      { endpoint: 'unix:///run/c.sock', name: 'containerd', pid: '/run/c.pid' },
    ]);
    expect(parseCompare(['node', 'bench.js', '--smoke'])).toEqual([]);
  });

  it('refuses an entry without a unix endpoint, a name and a pid', () => {
    expect(() => parseCompare(['--compare=unix:///tmp/x.sock:1234'])).toThrow(/want unix:\/\/SOCKET:NAME:PID/);
    expect(() => parseCompare(['--compare=tcp://127.0.0.1:1:name:12'])).toThrow(/tcp:/);
  });

  it('reads a pid as a number or from a pidfile', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-compare-'));
    writeFileSync(path.join(dir, 'rt.pid'), '4321\n');
    writeFileSync(path.join(dir, 'bad.pid'), 'nope\n');
    expect(resolvePid('77')).toBe(77);
    expect(resolvePid(path.join(dir, 'rt.pid'))).toBe(4321);
    expect(() => resolvePid(path.join(dir, 'bad.pid'))).toThrow(/bad\.pid/);
  });
});

/** A runtime that answers every lifecycle call at once and records them. */
function fakeRuntime(name: string, failOn?: string): LifecycleTarget & { calls: string[] } {
  let seq = 0;
  let ctr = 0;
  const calls: string[] = [];
  return {
    name,
    calls,
    async call<T>(method: string, req: unknown): Promise<T> {
      const r = req as { pod_sandbox_id?: string; container_id?: string };
      calls.push(`${method} ${r.pod_sandbox_id ?? r.container_id ?? ''}`.trim());
      if (method === failOn) throw new Error('boom');
      if (method === 'RunPodSandbox') return { pod_sandbox_id: `${name}-p${++seq}` } as T;
      if (method === 'CreateContainer') return { container_id: `${r.pod_sandbox_id}-c${++ctr}` } as T;
      return {} as T;
    },
  };
}

/** That both calls were made, `first` before `then` (indexOf alone would take a missing call for an early one). */
function expectInOrder(calls: string[], first: string, then: string): void {
  expect(calls).toContain(first);
  expect(calls).toContain(then);
  expect(calls.indexOf(first)).toBeLessThan(calls.indexOf(then));
}

describe('the lifecycle comparison', () => {
  const shape = { pods: 2, containers: 1, podConfig: () => ({ metadata: { name: 'p' } }), image: 'img' };

  it('runs the same pods through each runtime, stops container then sandbox, and tables both with the ratio', async () => {
    const a = fakeRuntime('crishim');
    const b = fakeRuntime('other');
    const out = await compareLifecycle([a, b], shape);
    for (const rt of [a, b]) {
      expect(rt.calls.filter((c) => c.startsWith('RunPodSandbox'))).toHaveLength(2);
      const p = `${rt.name}-p1`;
      expectInOrder(rt.calls, `StopContainer ${p}-c1`, `StopPodSandbox ${p}`);
      expectInOrder(rt.calls, `StopPodSandbox ${p}`, `RemovePodSandbox ${p}`);
    }
    expect(out).toMatch(/^pod lifecycle, 2 pods/);
    expect(out).toMatch(/\| call +\| crishim +\| other +\| crishim \/ other \|/);
    expect(out).toMatch(/\| StopPodSandbox p50 +\| [\d.]+ ms +\| [\d.]+ ms +\| ([\d.]+|-) +\|/);
    // no pid given: no CPU figure, rather than a made-up one
    expect(out).toMatch(/\| runtime CPU per pod +\| - +\| - +\| - +\|/);
  });

  it('gives each pod as many containers as asked, all started, and stops them all before the sandbox', async () => {
    const a = fakeRuntime('crishim');
    const out = await compareLifecycle([a], { ...shape, containers: 3 });
    const p = 'crishim-p1';
    const mine = ['c1', 'c2', 'c3'].map((c) => `${p}-${c}`);
    for (const c of mine) {
      expect(a.calls).toContain(`StartContainer ${c}`);
      expectInOrder(a.calls, `StopContainer ${c}`, `StopPodSandbox ${p}`);
    }
    expect(a.calls.filter((c) => c.startsWith('CreateContainer'))).toHaveLength(6);
    expect(out).toMatch(/^pod lifecycle, 2 pods of 3 containers one call/);
  });

  it("counts a runtime's own CPU per pod when it has a pid, and dockerd's only when it drives dockerd", async () => {
    const a = { ...fakeRuntime('crishim'), pid: process.pid, usesDocker: false };
    const out = await compareLifecycle([a], shape);
    expect(out).toMatch(/\| runtime CPU per pod +\| [\d.]+ ms +\|/);
    expect(out).toMatch(/\| dockerd CPU per pod +\| - +\|/);
    expect(out).toMatch(/\| runtime \+ dockerd CPU per pod +\| [\d.]+ ms +\|/);
  });

  it('takes each runtime through warm-up pods first, leaving them out of the figures', async () => {
    const a = fakeRuntime('crishim');
    // the warm-up's calls are slow, as a daemon's first are: none of that may show in a p50
    const call = a.call.bind(a);
    a.call = async <T>(method: string, req: unknown): Promise<T> => {
      const slow = ['RunPodSandbox', 'StopPodSandbox', 'RemovePodSandbox'].includes(method);
      if (slow && a.calls.filter((c) => c.startsWith('RemovePodSandbox')).length < 2)
        await new Promise((r) => setTimeout(r, 200));
      return call<T>(method, req);
    };
    const out = await compareLifecycle([a], { ...shape, warmUpPods: 2 });
    expect(a.calls.filter((c) => c.startsWith('RunPodSandbox'))).toHaveLength(4);
    // the warm-up pods are gone before the first measured one is made
    const runs = a.calls.flatMap((c, i) => (c === 'RunPodSandbox' ? [i] : []));
    expect(a.calls.indexOf('RemovePodSandbox crishim-p2')).toBeLessThan(runs[2]);
    for (const c of ['RunPodSandbox', 'StopPodSandbox', 'RemovePodSandbox'])
      expect(Number(new RegExp(`\\| ${c} p50 +\\| ([\\d.]+) ms`).exec(out)?.[1])).toBeLessThan(100);
    expect(out).toMatch(/each runtime first took 2 pods through it, not counted/);
  });

  it('names the runtime and call that failed, and still removes the pods it made', async () => {
    const b = fakeRuntime('other', 'StartContainer');
    await expect(compareLifecycle([b], shape)).rejects.toThrow('StartContainer on other: boom');
    expect(b.calls).toContain('RemovePodSandbox other-p1');
  });
});

describe('table', () => {
  it('pads every column to its widest cell', () => {
    expect(table(['a', 'bb'], [['ccc', 'd']]).split('\n')).toEqual(['| a   | bb |', '|-----|----|', '| ccc | d  |']);
  });
});
