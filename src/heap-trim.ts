import { getHeapSpaceStatistics, setFlagsFromString } from 'v8';
import { runInNewContext } from 'vm';
import type { Logger } from 'winston';

/**
 * V8 gives old-space pages back to the OS only in its memory reducer's GCs, and re-arms the
 * reducer only once committed memory has grown ~10 MB past its last pass. Its ordinary full GCs
 * run when garbage reaches live + 8 MB and do not shrink the space. Under the kubelet's steady
 * polling crishim's live heap is ~16 MiB and flat, so 6-8 MiB of its RSS was garbage headroom
 * that the reducer never came back for (docs/configuration.md, `--heap-trim-step`).
 *
 * The trimmer does the reducer's job at a smaller step: when the old space holds `stepBytes`
 * more than the last trim left, one full GC that compacts gives the freed pages back. It also
 * takes the place of V8's own full GC, which would come later. One trim costs ~45 ms of CPU at
 * 110 pods, about once a minute under the kubelet's polling; an idle daemon allocates nothing,
 * so nothing grows and no trim runs.
 */
export interface HeapSpace {
  /** Bytes the old space holds from the OS. */
  committed(): number;
  /** One full GC that compacts the old space, so its emptied pages go back to the OS. */
  compact(): void;
}

export interface TrimReport {
  beforeBytes: number;
  afterBytes: number;
  ms: number;
}

/** The trim decision alone: answers a check that trims when the old space has grown a step past what the last trim left. */
export function trimWhenGrown(
  stepBytes: number,
  heap: HeapSpace,
  onTrim: (r: TrimReport) => void = () => undefined,
): () => boolean {
  let floor = heap.committed();
  return () => {
    const before = heap.committed();
    // the heap may also shrink on its own (V8's reducer): follow it down
    if (before < floor) floor = before;
    if (before - floor < stepBytes) return false;
    const t0 = process.hrtime.bigint();
    heap.compact();
    floor = heap.committed();
    onTrim({ beforeBytes: before, afterBytes: floor, ms: Number(process.hrtime.bigint() - t0) / 1e6 });
    return true;
  };
}

/**
 * The old space of this isolate. `gc` is reachable without node's --expose-gc: a context made
 * while the flag is on gets it, and the flag goes off again so no later context (or the main
 * one) sees it. Compaction is asked for around the one call, not left on for V8's own GCs.
 */
export function v8OldSpace(): HeapSpace {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  return {
    committed: () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_size ?? 0,
    compact: () => {
      setFlagsFromString('--compact-on-every-full-gc');
      try {
        gc();
      } finally {
        setFlagsFromString('--no-compact-on-every-full-gc');
      }
    },
  };
}

const MiB = 1024 * 1024;

/** Checks every `everyMs` in the daemon (0 MiB: off), one debug line per trim; answers whether it started. */
export function startHeapTrim(stepMiB: number, everyMs: number, logger: Logger): boolean {
  if (stepMiB <= 0) return false;
  const check = trimWhenGrown(stepMiB * MiB, v8OldSpace(), (r) =>
    logger.debug('heap trimmed', {
      oldSpaceMiB: +(r.beforeBytes / MiB).toFixed(1),
      afterMiB: +(r.afterBytes / MiB).toFixed(1),
      ms: +r.ms.toFixed(1),
    }),
  );
  // unref'd: the daemon's exit never waits for it
  setInterval(check, everyMs).unref();
  return true;
}
