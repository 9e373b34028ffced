import { watch, type FSWatcher } from 'fs';

/**
 * Calls `onChange` whenever something in `dir` changes (inotify on Linux): Docker appending to
 * a container's json-file, or rotating it. The copy loop sleeps on this instead of polling
 * every container's file several times a second, which at 110 idle containers was a read
 * through the thread pool every 2 ms. Undefined when the directory cannot be watched (gone,
 * inotify watches exhausted, a filesystem without notifications): the caller keeps polling.
 */
export function watchLogDir(dir: string, onChange: () => void): { close(): void } | undefined {
  let w: FSWatcher;
  try {
    w = watch(dir, { persistent: false }, onChange);
  } catch {
    return undefined;
  }
  // a watch that breaks later (the directory removed) just stops waking; polling remains
  w.on('error', () => w.close());
  return { close: () => w.close() };
}
