/**
 * A set that keeps at most `size` keys, forgetting the oldest added first: for what the view
 * remembers about events and containers it no longer tracks, whose number must not grow with
 * the node's uptime.
 */
export class BoundedSet {
  private readonly keys = new Set<string>();

  constructor(private readonly size: number) {}

  add(key: string): void {
    this.keys.add(key);
    if (this.keys.size > this.size) this.keys.delete(this.keys.values().next().value as string);
  }

  has(key: string): boolean {
    return this.keys.has(key);
  }

  /** Whether it was there. */
  delete(key: string): boolean {
    return this.keys.delete(key);
  }
}
