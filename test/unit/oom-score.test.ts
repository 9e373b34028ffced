import { lowestOomScoreAdj, type OomScoreFile } from '../../src/docker/oom-score';

/** A kernel's oom_score_adj file that refuses values below `min`, remembering what it was asked. */
function kernelFile(start: number, min: number): OomScoreFile & { value: number; writes: number[] } {
  const f = {
    value: start,
    writes: [] as number[],
    read: async () => `${f.value}\n`,
    write: async (v: string) => {
      const n = Number(v);
      f.writes.push(n);
      if (n < min) throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
      f.value = n;
    },
  };
  return f;
}

describe('oom_score_adj probe against a refusing kernel', () => {
  it('finds the exact lowest allowed value and restores the original', async () => {
    for (const min of [0, -1, -500, -997, 7]) {
      const f = kernelFile(min > 0 ? 10 : 0, min);
      expect(await lowestOomScoreAdj(-998, f)).toBe(Math.max(min, -998));
      expect(f.value).toBe(min > 0 ? 10 : 0);
    }
  });

  it('answers the wanted value at once when the kernel accepts it', async () => {
    const f = kernelFile(0, -1000);
    expect(await lowestOomScoreAdj(-998, f)).toBe(-998);
    expect(f.writes).toEqual([-998, 0]);
  });

  it('probes with a binary search, not value by value', async () => {
    const f = kernelFile(0, 0);
    await lowestOomScoreAdj(-1000, f);
    expect(f.writes.length).toBeLessThan(15);
  });
});
