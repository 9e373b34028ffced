import type { DockerEngine } from '../docker/engine';
import type { DockerEvent, EventSource } from '../docker/events';
import { shortId, type Logger } from '../logging/logger';
import { TYPE_LABEL } from '../labels';
import { brought, CHANGING_EVENTS, followViewEvents, HeardOnce, wasBrought, type Brought } from './docker-events';
import type { ExecExits } from '../docker/exec-exits';
import { BoundedSet } from './bounded-set';
import type { ContainerInfo, ReadOptions, StateStore } from './view';

export { STATUS_READ, type ContainerInfo, type ReadOptions, type StateStore } from './view';

export interface StoreOptions {
  /** The safety-net resync period; a missed event is corrected within it at worst. */
  resyncMs?: number;
  /** Events are how the view hears about changes made behind crishim's back; tests may feed them by hand. */
  subscribe?: boolean;
  /** Told every exec's end from the same stream, so exec probes need not inspect for it. */
  execExits?: ExecExits;
}

interface Entry {
  id: string;
  info?: ContainerInfo;
  /** Bumped by every invalidation; the entry is current when `doneGen` caught up with it. */
  gen: number;
  doneGen: number;
  refreshing?: Promise<void>;
  /** Why the last re-inspect failed (Docker unreachable, ...): reads report it rather than a stale answer. */
  error?: Error;
  /** The events crishim's last call on it brought, which change nothing its re-inspect missed. */
  brings?: Brought;
  /** crishim's own calls on it still waiting for Docker's answer. */
  calls: number;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const isOurs = (info: ContainerInfo): boolean => info.Config?.Labels?.[TYPE_LABEL] !== undefined;
const FULL_ID = /^[0-9a-f]{64}$/;
/** Removed ids remembered: more than a node's pods remove in the minutes the kubelet still asks about them. */
const GONE_KEPT = 1024;

export function createStateStore(docker: DockerEngine, logger: Logger, opts: StoreOptions = {}): StateStore {
  const entries = new Map<string, Entry>();
  /** Lookups of refs that are not a known id (a name, an unknown prefix) still in flight. */
  const pending = new Set<Promise<void>>();
  let synced = false;
  // while no event stream is live (before the first subscription, after a disconnect) nothing
  // tells the view about changes made behind crishim's back: every read lists Docker again
  let subscribed = opts.subscribe === false;
  let syncing: Promise<void> | undefined;
  // bumped on every disconnect: a resync that started before it cannot vouch for the view
  let epoch = 0;
  let source: EventSource | undefined;
  let timer: NodeJS.Timeout | undefined;
  // entries waiting for a re-inspect: a read with none pending need not look at every entry
  const stale = new Set<Entry>();
  // what list() last answered, until an entry is added, dropped or re-inspected
  let listed: readonly ContainerInfo[] | undefined;
  // removed ones, so a read of one (the kubelet's, the events hub's) needs no inspect; an event or a
  // list naming one still tracks it until an inspect, so a removal taken wrongly would heal
  const gone = new BoundedSet(GONE_KEPT);
  /** Settled when an own call begins on a container none was changing: relaxed reads look again. */
  let callBegan = deferred();
  let forgets = 0; // a lookup's answer across a forget of its container may predate the removal: not tracked

  const isCurrent = (e: Entry): boolean => e.doneGen === e.gen;

  /** Drops a removed container with no inspect (ids are never reused); a late event of it costs one. */
  const forget = (id: string): void => {
    forgets++;
    gone.add(id);
    const e = entries.get(id);
    if (!e) return;
    entries.delete(id);
    stale.delete(e);
    listed = undefined;
    if (e.info) logger.debug('state: container gone', { containerId: shortId(id) });
  };

  const refresh = (e: Entry): Promise<void> => {
    const id = e.id;
    e.refreshing ??= (async () => {
      while (!isCurrent(e)) {
        const gen = e.gen;
        let info: ContainerInfo | undefined;
        try {
          info = await docker.findContainer(id);
        } catch (err) {
          e.error = err as Error;
          return;
        }
        // invalidated again while Docker answered: that answer may predate the change
        if (e.gen !== gen) continue;
        e.doneGen = gen;
        e.error = undefined;
        stale.delete(e);
        listed = undefined;
        if (info && isOurs(info)) {
          e.info = info;
        } else if (entries.get(id) === e) {
          forget(id);
        }
      }
    })().finally(() => (e.refreshing = undefined));
    return e.refreshing;
  };

  const invalidateId = (id: string, now = false, brings?: readonly string[]): void => {
    let e = entries.get(id);
    if (!e) {
      e = { id, gen: 0, doneGen: 0, calls: 0 };
      entries.set(id, e);
    }
    e.gen++;
    stale.add(e);
    if (!now) return;
    e.brings = brought(brings);
    void refresh(e);
  };

  /** The tracked id a ref names: itself, or the only id it prefixes. */
  const resolve = (ref: string): string | undefined => {
    if (entries.has(ref)) return ref;
    if (!/^[0-9a-f]+$/.test(ref)) return undefined;
    let found: string | undefined;
    for (const id of entries.keys()) {
      if (!id.startsWith(ref)) continue;
      if (found) return undefined;
      found = id;
    }
    return found;
  };

  /** Asks Docker about a ref the view cannot resolve, and tracks the container if it is ours. */
  const lookUp = (ref: string): Promise<ContainerInfo | undefined> => {
    const since = forgets;
    const p = docker.findContainer(ref).then((info) => {
      if (info && isOurs(info) && !entries.has(info.Id) && !(forgets !== since && gone.has(info.Id))) {
        entries.set(info.Id, { id: info.Id, info, gen: 1, doneGen: 1, calls: 0 });
        listed = undefined;
      }
      return info;
    });
    const tracked = p.then(
      () => undefined,
      () => undefined,
    );
    pending.add(tracked);
    void tracked.finally(() => pending.delete(tracked));
    return p;
  };

  const reinspect = (ref: string, brings?: readonly string[]): void => {
    const id = resolve(ref) ?? (FULL_ID.test(ref) ? ref : undefined);
    if (id) return invalidateId(id, true, brings);
    // a name or an unknown prefix: learn which container it is (if it still exists)
    void lookUp(ref).then(
      (info) => info && entries.has(info.Id) && invalidateId(info.Id, true),
      () => undefined,
    );
  };

  const resync = (full = false): Promise<void> => {
    if (syncing) return syncing;
    const startEpoch = epoch;
    syncing = (async () => {
      const states = new Map((await docker.listContainers({ label: [TYPE_LABEL] })).map((c) => [c.Id, c.State]));
      let changed = 0;
      // new ones, those whose state differs, and those the list no longer shows
      for (const id of new Set([...states.keys(), ...entries.keys()])) {
        if (full || entries.get(id)?.info?.State.Status !== states.get(id)) {
          changed++;
          invalidateId(id);
        }
      }
      if (changed > 0) logger.debug('state: resync found containers to re-inspect', { count: changed, full });
      // with no reads (no kubelet), what was removed would otherwise stay tracked, stale, until one
      await Promise.all([...stale].map(refresh));
      if (epoch === startEpoch) synced = true;
    })().finally(() => (syncing = undefined));
    return syncing;
  };

  /**
   * Waits until the view is synchronised and every entry (or the one asked for) is current, but
   * for those an own call is changing when `opts.beforeOwnCalls`.
   */
  const settle = async (only?: Entry, opts: ReadOptions = {}): Promise<void> => {
    if (!synced) await resync(true);
    else if (!subscribed) await resync(false);
    const due = (e: Entry): boolean => !isCurrent(e) && !(opts.beforeOwnCalls && e.calls > 0);
    for (let pass = 0; pass < 5;) {
      const waiting = only ? (due(only) ? [only] : []) : [...stale].filter(due);
      if (waiting.length === 0 && (only || pending.size === 0)) return;
      const round = Promise.all([...waiting.map(refresh), ...(only ? [] : [...pending])]).then(() => false);
      // a call that begins on one of them (a start right after its create) may hold its inspect for seconds
      if (await (opts.beforeOwnCalls ? Promise.race([round, callBegan.promise.then(() => true)]) : round)) continue;
      pass++;
      const failed = waiting.find((e) => !isCurrent(e) && e.error);
      if (failed?.error) throw failed.error;
    }
  };

  const heardOnce = new HeardOnce();
  const onEvent = (ev: DockerEvent): void => {
    if (ev.Type !== 'container' || !CHANGING_EVENTS.has(ev.Action) || !ev.Actor?.ID) return;
    if (!heardOnce.first(ev)) return;
    const id = ev.Actor.ID;
    if (ev.Action === 'destroy') return forget(id);
    const e = entries.get(id);
    if (e?.brings) {
      if (wasBrought(e.brings, ev.Action)) return;
      e.brings = undefined;
    }
    invalidateId(id);
  };

  if (opts.subscribe !== false) {
    source = followViewEvents(docker, logger, opts.execExits, onEvent, {
      retryMs: 250,
      onSubscribed: (reconnect) => {
        subscribed = true;
        // what changed while no event could reach us is only in a full list; after a reconnect
        // dockerd may have restarted, so every container is inspected again
        void resync(reconnect).catch((err: unknown) =>
          logger.warn('state: resync failed', { error: (err as Error).message }),
        );
      },
      onDisconnect: () => {
        subscribed = false;
        epoch++;
        synced = false;
      },
    });
  }
  if (opts.resyncMs !== 0) {
    timer = setInterval(() => {
      void resync(false).catch((err: unknown) =>
        logger.debug('state: periodic resync failed', { error: (err as Error).message }),
      );
    }, opts.resyncMs ?? 60_000);
    timer.unref();
  }

  const changing = (ref: string): (() => void) => {
    const e = entries.get(resolve(ref) ?? '');
    if (!e) return () => undefined;
    if (e.calls++ === 0) {
      callBegan.resolve();
      callBegan = deferred();
    }
    let ended = false;
    return () => {
      if (!ended) e.calls--;
      ended = true;
    };
  };

  return {
    async list(opts) {
      await settle(undefined, opts);
      if (listed) return listed;
      const out: ContainerInfo[] = [];
      for (const e of entries.values()) if (e.info) out.push(e.info);
      return (listed = out);
    },
    async get(ref, opts = {}) {
      if (!synced || !subscribed) await settle(undefined, opts);
      const id = resolve(ref);
      const e = id ? entries.get(id) : undefined;
      if (!e) return gone.has(ref) ? undefined : lookUp(ref);
      // one never inspected has nothing from before a call to answer with
      const relaxed = e.info ? opts : {};
      await settle(e, relaxed);
      if (relaxed.beforeOwnCalls && e.calls > 0) return e.info;
      if (!isCurrent(e) && e.error) throw e.error;
      // gone while we waited: the entry was dropped
      return entries.get(id ?? '') === e ? e.info : undefined;
    },
    heard: onEvent,
    changing,
    reinspect,
    removed(ref) {
      // crishim removes by id; a ref the view cannot resolve is dropped at its destroy event
      const id = resolve(ref);
      if (id) forget(id);
    },
    resync,
    close() {
      source?.close();
      if (timer) clearInterval(timer);
    },
  };
}
