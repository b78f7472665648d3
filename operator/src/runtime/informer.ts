// An informer: LIST then WATCH one resource type into a local cache, forever.
//
// - A watch that fails (connection refused, 429, 5xx, an unparsable line) or ends (server
//   timeout, our watchdog) resumes from the last resourceVersion without a LIST, after a capped
//   exponential backoff (or after the server's Retry-After, when it sends one) — as client-go's
//   reflector does.
//   Bookmarks keep that resourceVersion fresh. Only when the server no longer has it (410 Gone)
//   or a LIST failed does the informer LIST again; the relist emits `delete` for objects that
//   vanished while we were not watching, so nothing is missed.
// - LISTs of all the informers of a process take turns (relist-gate.ts), and a relist updates
//   the cache page by page in place: never a second copy of a kind in memory.
// - A watchdog aborts a stream that has been silent longer than the server-side timeout plus a
//   margin (half-open TCP connections otherwise stall a watch forever: client-node #596).
// - `resync` events for every cached object fire periodically, so a controller re-checks the
//   world even if an event was somehow lost — spread over the period, a slice a second (resync.ts).
// - Handlers run synchronously and must only enqueue; an exception in a handler is logged and
//   never stops the informer.
import { setTimeout as sleep } from 'node:timers/promises';
import { logger } from '../util/log.ts';
import { trimForCache } from './cache-trim.ts';
import {
  ApiError,
  type KubeClient,
  type KubeObject,
  type ObjectList,
  type ResourceType,
  resourcePath,
} from './client.ts';
import { internForCache } from './intern.ts';
import type { Reconnect } from './reconnect.ts';
import type { RelistGate } from './relist-gate.ts';
import { spreadResync } from './resync.ts';

export const LIMITS = {
  // LIST page size: bounds one response's memory. 500 StatefulSets' JSON (managedFields and all)
  // parse to tens of MiB that outlive the 1 MiB young generation; at 1,000 OberonKubes the relists
  // after an API server's restart raised the operator's peak RSS to 227 MiB with pages of 500, to
  // 192 with 100 (bench/operator/kube.ts --overload: results operator-kube-pages500.json, operator-kube.json).
  pageSize: 100,
  watchTimeoutSec: 300, // server-side watch timeout; a fresh watch every ~5 min keeps connections honest
  watchdogMarginMs: 30_000, // silence beyond the server timeout + this margin means a dead connection
  minWatchMs: 1_000, // a watch closed sooner without a single event is treated as a failure (no hot loop)
  backoffBaseMs: 200, // first retry after a failed LIST/WATCH
  backoffMaxMs: 10_000, // retry cap: an API server restart is noticed within 10 s
  resyncMs: 10 * 60_000, // periodic resync of every cached object (controller-runtime SyncPeriod spirit)
} as const;

export type InformerEventType = 'add' | 'update' | 'delete' | 'resync';
export type InformerHandler<T> = (type: InformerEventType, obj: T, old?: T) => void;

export interface InformerOptions {
  type: ResourceType;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resyncMs?: number;
  watchTimeoutSec?: number;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Keep managedFields in cached objects (default false: they are large and controllers never read them). */
  keepManagedFields?: boolean;
  /**
   * Cache only objects this accepts (busy kinds such as Events: a controller wants a few of
   * them); an object that stops being accepted is treated as deleted.
   */
  keep?: (obj: KubeObject) => boolean;
  /** Told of every LIST, WATCH and failure (the manager counts them in informer_operations_total). */
  onOperation?: (op: InformerOperation) => void;
  /** Shared by the informers of a process: their LISTs take turns (relist-gate.ts). */
  relistGate?: RelistGate;
  /** Shared likewise: the first to reach the server again wakes the others (reconnect.ts). */
  reconnect?: Reconnect;
}

export type InformerOperation = 'list' | 'watch' | 'failure';

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject & { code?: number; message?: string };
}

const ownerUid = (obj: KubeObject): string | undefined =>
  obj.metadata.ownerReferences?.find((r) => r.controller)?.uid;

/**
 * Drops metadata.managedFields (large, never read by a controller) by giving the object a new
 * metadata without it. `delete` would turn every cached metadata into a dictionary-mode object:
 * in a heap snapshot at 300 OberonKubes, 7,500 of them held 5 MiB of property dictionaries, and a
 * parsed metadata with its managedFields deleted takes 1,137 bytes against 401 rebuilt (Node 24).
 */
export function dropManagedFields(obj: KubeObject): void {
  if (!obj.metadata || !('managedFields' in obj.metadata)) return;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  obj.metadata = metadata;
}

export function objectKey(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : `${obj.metadata.name}`;
}

export class Informer<T extends KubeObject = KubeObject> {
  readonly opts: InformerOptions;
  private readonly client: KubeClient;
  private readonly cache = new Map<string, T>();
  /**
   * Keys of the cached objects by their controller owner's uid: a parent's children without a scan
   * of the kind. Built at the first controlledBy(), then kept: one informer of 20 asks (OberonKube's
   * machines), and every other's index was 1.2 MiB of heap at 300 OberonKubes (a heap snapshot).
   */
  private byOwner: Map<string, Set<string>> | undefined;
  private readonly handlers: InformerHandler<T>[] = [];
  private rv = '';
  private stopped = true;
  private synced = false;
  private loop: Promise<void> | undefined;
  private current: { abort(): void } | undefined;
  private stopResync: (() => void) | undefined;
  private firstSync: { resolve: () => void; promise: Promise<void> } | undefined;
  private pause: AbortController | undefined;
  private absentNow = false;
  /** The last LIST or WATCH failed: the next one that reaches the server wakes the others. */
  private failing = false;
  private readonly log;
  /** Counters for tests and metrics. */
  readonly stats = { lists: 0, watches: 0, failures: 0, events: 0 };

  constructor(client: KubeClient, opts: InformerOptions) {
    this.client = client;
    this.opts = opts;
    this.log = logger('informer', { resource: opts.type.plural, selector: opts.labelSelector });
  }

  on(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** The last LIST was answered 404: the kind is not served (its CRD is not installed). Retried with backoff. */
  get absent(): boolean {
    return this.absentNow;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(namespace ? `${namespace}/${name}` : name);
  }

  getByKey(key: string): T | undefined {
    return this.cache.get(key);
  }

  list(namespace?: string): T[] {
    const all = [...this.cache.values()];
    return namespace ? all.filter((o) => o.metadata.namespace === namespace) : all;
  }

  get size(): number {
    return this.cache.size;
  }

  /**
   * The cached objects whose controller owner has `uid`. An O(children) read: a scan of the whole
   * kind per reconcile was 1,000 × 4,000 OberonMachines per poll round at 1,000 OberonKubes, the
   * operator's hottest path (a CPU profile: 69 % of its time in that loop).
   */
  controlledBy(uid: string): T[] {
    if (!this.byOwner) {
      this.byOwner = new Map();
      for (const [k, o] of this.cache) this.index(k, o, undefined);
    }
    const out: T[] = [];
    for (const k of this.byOwner.get(uid) ?? []) {
      const o = this.cache.get(k);
      if (o) out.push(o);
    }
    return out;
  }

  private index(key: string, obj: T | undefined, prev: T | undefined): void {
    if (!this.byOwner) return; // nobody has asked yet: controlledBy() builds it from the cache
    const was = prev ? ownerUid(prev) : undefined;
    const now = obj ? ownerUid(obj) : undefined;
    if (was === now) return;
    if (was) {
      const set = this.byOwner.get(was);
      set?.delete(key);
      if (set?.size === 0) this.byOwner.delete(was);
    }
    if (now) {
      const set = this.byOwner.get(now) ?? new Set<string>();
      set.add(key);
      this.byOwner.set(now, set);
    }
  }

  /** Starts the loop; resolves once the first LIST is in the cache. */
  start(): Promise<void> {
    if (!this.stopped) return this.firstSync?.promise ?? Promise.resolve();
    this.stopped = false;
    let resolve = () => {};
    const promise = new Promise<void>((r) => {
      resolve = r;
    });
    this.firstSync = { resolve, promise };
    this.loop = this.run();
    const resyncMs = this.opts.resyncMs ?? LIMITS.resyncMs;
    if (resyncMs > 0) {
      this.stopResync = spreadResync(this.cache, resyncMs, (o) => this.emit('resync', o));
    }
    return promise;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopResync?.();
    this.stopResync = undefined;
    this.current?.abort();
    this.pause?.abort();
    this.firstSync?.resolve();
    await this.loop;
  }

  private emit(type: InformerEventType, obj: T, old?: T): void {
    this.stats.events++;
    for (const h of this.handlers) {
      try {
        h(type, obj, old);
      } catch (err) {
        this.log.error({ err, event: type, object: objectKey(obj) }, 'Informer handler threw; event ignored');
      }
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        if (!this.rv) await this.relistInTurn();
        await this.watchOnce();
        failures = 0;
      } catch (err) {
        if (this.stopped) break;
        this.stats.failures++;
        this.opts.onOperation?.('failure');
        failures++;
        const gone = err instanceof ApiError && err.status === 410;
        // The server no longer has our resourceVersion: only a LIST can say what changed. Any
        // other failure resumes the watch from where it was (a failed LIST left rv empty).
        if (gone) this.rv = '';
        const cap = this.opts.backoffMaxMs ?? LIMITS.backoffMaxMs;
        const base = this.opts.backoffBaseMs ?? LIMITS.backoffBaseMs;
        const delay = Math.min(cap, base * 2 ** Math.min(failures - 1, 20));
        // A Retry-After is the server's word on when it can answer (a 429 "storage is
        // (re)initializing" after a restart says 1 s): it replaces our own backoff, which by then
        // had grown to 10 s and kept every informer away for that long after the server was ready
        // (a change at 1,000 OberonKubes: 16 s after ready).
        const asked = err instanceof ApiError ? (err.retryAfterMs ?? 0) : 0;
        const jittered = asked > 0 ? asked : Math.round(delay * (0.8 + Math.random() * 0.4));
        const notServed = err instanceof ApiError && err.status === 404;
        if (notServed && !this.absentNow)
          this.log.warn(
            { group: this.opts.type.group, retryEveryMs: cap },
            'This kind is not served (its CRD is not installed); waiting for it, the other kinds go on',
          );
        this.absentNow = notServed;
        this.log[failures > 3 && !gone && !notServed ? 'warn' : 'debug'](
          { err: (err as Error).message, retryInMs: jittered, failures, relist: !this.rv },
          this.rv ? 'Watch failed; resuming it after backoff' : 'Watch failed; relisting after backoff',
        );
        this.failing = true;
        this.pause = new AbortController();
        const signal = this.pause.signal;
        const wait = sleep(gone && failures === 1 ? 0 : jittered, undefined, { signal }).catch(() => {});
        // A kind not served waits for its CRD, and a Retry-After is the server's word: another
        // informer's success changes neither.
        const wakeable = !notServed && asked === 0 && this.opts.reconnect;
        const woken = wakeable ? [wakeable.next(signal)] : [];
        await Promise.race([wait, ...woken]);
        this.pause.abort(); // ends whichever of the two is still pending
        this.pause = undefined;
      }
    }
  }

  private relistInTurn(): Promise<void> {
    const gate = this.opts.relistGate;
    return gate ? gate.run(() => (this.stopped ? Promise.resolve() : this.relist())) : this.relist();
  }

  private reachedServer(): void {
    if (!this.failing) return;
    this.failing = false;
    this.opts.reconnect?.reached();
  }

  /**
   * LISTs the kind page by page into the cache in place (an object replaced drops the old copy at
   * once; no second map of the kind), telling each add and update as its page comes; then the
   * objects no page named are deleted. A LIST that fails halfway leaves a cache of objects each
   * as the server had them, and the next LIST finishes the job.
   */
  private async relist(): Promise<void> {
    this.stats.lists++;
    this.opts.onOperation?.('list');
    this.rv = '';
    const seen = new Set<string>();
    let cont: string | undefined;
    let rv = '';
    do {
      const page: ObjectList<T> = await this.client.list<T>(this.opts.type, this.opts.namespace, {
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
        limit: LIMITS.pageSize,
        continue: cont,
      });
      for (const item of page.items ?? []) {
        // LIST items carry no apiVersion/kind; set them so cached objects are self-describing.
        item.apiVersion ??= this.opts.type.group
          ? `${this.opts.type.group}/${this.opts.type.version}`
          : this.opts.type.version;
        item.kind ??= this.opts.type.kind;
        if (this.opts.keep && !this.opts.keep(item)) continue; // unseen: deleted below if cached
        if (!this.opts.keepManagedFields) dropManagedFields(item);
        trimForCache(item); // defaulted fields and unread status (cache-trim.ts)
        const key = objectKey(item);
        seen.add(key);
        const obj = internForCache(item);
        const prev = this.cache.get(key);
        this.cache.set(key, obj);
        this.index(key, obj, prev);
        if (!prev) this.emit('add', obj);
        else if (prev.metadata.resourceVersion !== obj.metadata.resourceVersion)
          this.emit('update', obj, prev);
      }
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion ?? rv;
    } while (cont && !this.stopped);
    if (this.stopped) return;
    if (this.absentNow) this.log.info('This kind is served now; caching it');
    this.absentNow = false;
    for (const [k, v] of this.cache) {
      if (seen.has(k)) continue;
      this.cache.delete(k);
      this.index(k, undefined, v);
      this.emit('delete', v);
    }
    this.rv = rv;
    this.reachedServer();
    if (!this.synced) {
      this.synced = true;
      this.firstSync?.resolve();
    }
  }

  private async watchOnce(): Promise<void> {
    if (this.stopped) return;
    this.stats.watches++;
    this.opts.onOperation?.('watch');
    const startedAt = Date.now();
    let lines = 0;
    const timeoutSec = this.opts.watchTimeoutSec ?? LIMITS.watchTimeoutSec;
    let gone = false;
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      if (watchdog) clearTimeout(watchdog);
      watchdog = setTimeout(() => handle.abort(), timeoutSec * 1000 + LIMITS.watchdogMarginMs);
      watchdog.unref();
    };
    const handle = await this.client.stream(
      resourcePath(this.opts.type, this.opts.namespace),
      {
        watch: 1,
        resourceVersion: this.rv,
        allowWatchBookmarks: true,
        timeoutSeconds: Math.round(timeoutSec * (0.9 + Math.random() * 0.2)),
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
      },
      (raw) => {
        lines++;
        arm();
        const ev = raw as WatchEvent;
        if (ev.type === 'ERROR') {
          if (ev.object?.code === 410) gone = true;
          throw new ApiError(
            ev.object?.code ?? 500,
            'WatchError',
            ev.object?.message ?? 'watch error',
            ev.object,
          );
        }
        this.apply(ev);
      },
    );
    this.current = handle;
    this.reachedServer(); // the server answered the WATCH with 200
    if (this.stopped) handle.abort();
    arm();
    try {
      await handle.done;
      if (!this.stopped && lines === 0 && Date.now() - startedAt < LIMITS.minWatchMs) {
        throw new Error(`watch closed after ${Date.now() - startedAt} ms without an event`);
      }
    } catch (err) {
      if (gone) throw new ApiError(410, 'Expired', 'watch resourceVersion too old', undefined);
      throw err;
    } finally {
      if (watchdog) clearTimeout(watchdog);
      this.current = undefined;
    }
  }

  private apply(ev: WatchEvent): void {
    const obj = ev.object as T;
    const rv = obj.metadata?.resourceVersion;
    if (ev.type === 'BOOKMARK') {
      if (rv) this.rv = rv;
      return;
    }
    obj.apiVersion ??= this.opts.type.group
      ? `${this.opts.type.group}/${this.opts.type.version}`
      : this.opts.type.version;
    obj.kind ??= this.opts.type.kind;
    if (!this.opts.keepManagedFields) dropManagedFields(obj);
    trimForCache(obj); // defaulted fields and unread status (cache-trim.ts)
    if (ev.type !== 'DELETED') internForCache(obj); // one copy of each repeated value (intern.ts)
    const key = objectKey(obj);
    const prev = this.cache.get(key);
    if (this.opts.keep && ev.type !== 'DELETED' && !this.opts.keep(obj)) {
      if (prev) {
        this.cache.delete(key);
        this.index(key, undefined, prev);
        this.emit('delete', prev);
      }
      if (rv) this.rv = rv;
      return;
    }
    if (ev.type === 'DELETED') {
      if (!prev && this.opts.keep) {
        if (rv) this.rv = rv;
        return; // never cached: nothing to forget
      }
      this.cache.delete(key);
      this.index(key, undefined, prev);
      this.emit('delete', obj);
    } else {
      this.cache.set(key, obj);
      this.index(key, obj, prev);
      if (!prev) this.emit('add', obj);
      else if (prev.metadata.resourceVersion !== rv) this.emit('update', obj, prev);
    }
    if (rv) this.rv = rv;
  }
}
