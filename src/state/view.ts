import type * as Docker from '../docker/types';
import type { DockerEvent } from '../docker/events';

/* The state view's contract, as its readers see it; store.ts keeps it. */

export type ContainerInfo = Docker.ContainerInspectInfo;

/**
 * crishim's in-memory view of its sandboxes and containers (every Docker
 * container carrying the CRI type label): the last inspect of each, so List and
 * Status answer without asking Docker.
 *
 * It is kept right by invalidation, not by replaying events: anything that may
 * have changed a container (crishim's own request, a Docker event, a resync
 * that sees a different state) marks its entry stale; the next read that
 * returns it re-inspects it first. So the view is never older than the event
 * lag, whatever order events arrive in, and a lost or replayed event costs at
 * most one inspect, never a wrong answer. An event's inspect waits for a read:
 * a pod's start or stop brings several events, and one inspect after them all
 * answers for every one. crishim's own calls re-inspect at once, as the next
 * call reads what they changed; their own events need no inspect then (Brought).
 */
export interface StateStore {
  /**
   * Every tracked container, each current up to the event lag. Fails like Docker when the view
   * cannot be synchronised. The same array until a container changes, so derived answers can be
   * kept per array: never mutate it.
   */
  list(opts?: ReadOptions): Promise<readonly ContainerInfo[]>;
  /** A container by full id or unique prefix; Docker is asked when the view does not know it. */
  get(ref: string, opts?: ReadOptions): Promise<ContainerInfo | undefined>;
  /**
   * crishim's own call on a container (id or unique prefix) begins; the answer ends it. Until then
   * reads with `beforeOwnCalls` need not wait for the container's inspect.
   */
  changing(ref: string): () => void;
  /** A Docker event the events hub's subscription delivered, maybe before the view's own: acted on once for both. */
  heard(ev: DockerEvent): void;
  /**
   * Marks a container (id, prefix or name) as changed by crishim's own call and re-inspects it at
   * once: its caller (and the kubelet) reads it next, so the inspect runs in the gap before that
   * read, not in it. `brings`: the event actions the call made Docker send (see Brought).
   */
  reinspect(ref: string, brings?: readonly string[]): void;
  /** crishim removed it: dropped from the view with no inspect (Docker never reuses an id). */
  removed(ref: string): void;
  /** Lists our containers and re-inspects those whose state differs (`full`: all of them). */
  resync(full?: boolean): Promise<void>;
  close(): void;
}

/** How a read treats a container that one of crishim's own Docker calls is still changing. */
export interface ReadOptions {
  /**
   * Answer what the container was before the call rather than wait for the call and its
   * re-inspect. dockerd holds a container's inspect for as long as its start or stop runs, seconds
   * in a burst, and a read that waits holds the kubelet's whole relist with it. A status read
   * overlaps the call either way, so either answer is right for it; a handler that acts on the
   * answer (stop, remove, exec) waits. A container never inspected yet is left out of a list.
   */
  beforeOwnCalls?: boolean;
}

/** What status RPCs (List*, *Status, stats) read with: see ReadOptions. */
export const STATUS_READ: ReadOptions = { beforeOwnCalls: true };
