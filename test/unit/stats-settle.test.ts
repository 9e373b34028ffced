import type { Sample, Target } from '../../src/stats/sample';
import { readSettled } from '../../src/stats/settle';

describe('readSettled', () => {
  const run = async (targets: Target[], history: Set<string>, settleMs = 5) => {
    const reads: string[] = [];
    const rereads: string[] = [];
    const read =
      (into: string[], tag: string) =>
      async (t: Target): Promise<Sample> => {
        into.push(t.id);
        return { id: t.id, timestamp: tag, usage: t.running ? { cpuUsageNanos: 1n } : {} };
      };
    const out = await readSettled(targets, {
      read: read(reads, 'first'),
      reread: read(rereads, 'second'),
      hasHistory: (id) => history.has(id),
      settleMs,
      concurrency: 2,
    });
    return { out, reads, rereads };
  };

  it('reads every target in order, and again only the running ones without a CPU history', async () => {
    const { out, reads, rereads } = await run(
      [
        { id: 'new', running: true },
        { id: 'known', running: true },
        { id: 'stopped', running: false },
      ],
      new Set(['known']),
    );
    expect(reads).toEqual(['new', 'known', 'stopped']);
    expect(rereads).toEqual(['new']);
    expect(out.map((s) => `${s.id}:${s.timestamp}`)).toEqual(['new:second', 'known:first', 'stopped:first']);
  });

  it('no second look when settling is off or every target has a history', async () => {
    expect((await run([{ id: 'new', running: true }], new Set(), 0)).rereads).toEqual([]);
    expect((await run([{ id: 'a', running: true }], new Set(['a']))).rereads).toEqual([]);
  });
});
