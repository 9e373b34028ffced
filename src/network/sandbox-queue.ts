/**
 * Runs the operations of one key (a sandbox id) one after another, others in
 * parallel: a StopPodSandbox during a slow RunPodSandbox waits for its ADD.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    // forget a key once its last operation is done, so the map stays as small as the work in flight
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }

  /** Keys with operations queued or running. */
  get size(): number {
    return this.tails.size;
  }
}
