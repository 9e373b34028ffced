import { getHeapSpaceStatistics } from 'v8';
import { runInNewContext } from 'vm';
import { trimWhenGrown, v8OldSpace, type HeapSpace } from '../../src/heap-trim';

const MiB = 1024 * 1024;

/** A heap whose committed size the test sets; compact() drops it to `live`. */
function fakeHeap(live: number): HeapSpace & { size: number; compactions: number } {
  const h = {
    size: live,
    compactions: 0,
    committed: () => h.size,
    compact: () => {
      h.compactions++;
      h.size = live;
    },
  };
  return h;
}

describe('heap trim', () => {
  it('compacts only once the old space has grown a step past what the last trim left', () => {
    const heap = fakeHeap(16 * MiB);
    const trims: number[] = [];
    const check = trimWhenGrown(4 * MiB, heap, (r) => trims.push(r.beforeBytes - r.afterBytes));
    heap.size = 19.9 * MiB;
    expect(check()).toBe(false);
    heap.size = 20 * MiB;
    expect(check()).toBe(true);
    expect(heap.compactions).toBe(1);
    expect(trims).toEqual([4 * MiB]);
    // right after a trim nothing has grown: an idle daemon never trims again
    expect(check()).toBe(false);
    expect(check()).toBe(false);
    expect(heap.compactions).toBe(1);
  });

  it('measures growth from the lowest size seen, when V8 shrank the heap on its own', () => {
    const heap = fakeHeap(10 * MiB);
    heap.size = 20 * MiB;
    const check = trimWhenGrown(4 * MiB, heap);
    heap.size = 12 * MiB;
    expect(check()).toBe(false);
    heap.size = 15 * MiB;
    expect(check()).toBe(false);
    heap.size = 16 * MiB;
    expect(check()).toBe(true);
  });

  it("gives a real V8 old space's garbage pages back, without node's --expose-gc", () => {
    const heap = v8OldSpace();
    // fragment the old space: every page keeps a quarter of its objects, so a plain full GC frees no page
    const keep: object[] = [];
    let junk: object[] | null = [];
    for (let i = 0; i < 800_000; i++) (i % 4 ? junk : keep).push({ a: i, b: `x${i}` });
    junk = null;
    const before = heap.committed();
    heap.compact();
    const after = heap.committed();
    const used = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_used_size ?? 0;
    expect(keep).toHaveLength(200_000);
    expect(junk).toBeNull();
    // three quarters of the objects were garbage, spread over every page: a full GC that only
    // sweeps keeps ~12 MiB of those pages, one that compacts a few pages' slack
    expect(before - after).toBeGreaterThan(10 * MiB);
    expect(after - used).toBeLessThan(4 * MiB);
    // the GC function stays the trimmer's: no context gets a global gc
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });
});
