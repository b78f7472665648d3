// A controller: informer events → keys in a rate-limited work queue → level-triggered reconcile.
//
// reconcile(key) reads the current state from the caches, converges, and returns an optional
// requeueAfterMs. Outcomes:
//   success           → backoff forgotten; requeued after requeueAfterMs if given
//   ApiError 409      → requeued with backoff, logged at debug only (someone else wrote first)
//   TerminalError     → logged, not requeued (the object must change first)
//   any other error   → logged, requeued with per-key exponential backoff
// Nothing a reconcile throws reaches the process: the worker catches it.
import type { Logger } from 'pino';
import { logger } from '../util/log.ts';
import { trimForCache } from './cache-trim.ts';
import { ApiError, type KubeClient, type KubeObject, type ResourceType } from './client.ts';
import type { EventRecorder } from './events.ts';
import { dropManagedFields, type Informer, type InformerEventType } from './informer.ts';
import type { OperatorMetrics } from './metrics.ts';
import { controllerOf, FIELD_MANAGER, isSubset, withAppliedHash } from './objects.ts';
import { type Priority, runWorkers, WorkQueue } from './workqueue.ts';

export const LIMITS = {
  concurrency: 4, // reconciles in flight per controller: enough to hide API latency, gentle on the server
} as const;

export interface ObjectKeyRef {
  namespace: string;
  name: string;
}

export interface ReconcileResult {
  requeueAfterMs?: number;
}

/** An error that retrying cannot fix; the key is not requeued until its object changes. */
export class TerminalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TerminalError';
  }
}

/** What a reconcile function gets to work with. */
export interface ReconcileContext {
  client: KubeClient;
  recorder: EventRecorder;
  log: Logger;
  /** Cache of the primary kind. */
  primary: Informer<KubeObject>;
  /** Cache of an owned kind (only objects labelled managed-by retrokube). */
  owned(type: ResourceType): Informer<KubeObject>;
  /** Cache of a kind the definition `watches` (not owned; see WatchSpec). */
  watched(type: ResourceType): Informer<KubeObject>;
  /**
   * The freshest known copy of an object of the primary or an owned kind: the informer's, or the
   * one our own last write returned if the watch has not delivered it yet (saves redundant writes).
   */
  cached<T extends KubeObject>(type: ResourceType, namespace: string, name: string): T | undefined;
  /**
   * Server-side applies `desired` unless `observed` already has every field of it (and the same
   * applied-hash); returns the object as stored and whether a write was made.
   */
  applyIfChanged<T extends KubeObject>(
    type: ResourceType,
    desired: KubeObject,
    observed: KubeObject | undefined,
  ): Promise<{ object: T; wrote: boolean }>;
  /** Applies `status` to /status unless the observed status already equals it. */
  applyStatusIfChanged(
    type: ResourceType,
    observed: KubeObject,
    status: Record<string, unknown>,
  ): Promise<boolean>;
}

/** A filter that narrows an informer's cache; `id` names it so equal filters share one informer. */
export interface InformerFilter {
  id: string;
  keep(obj: KubeObject): boolean;
}

/** A kind the controller reads but does not own: `map` names the primary objects a change concerns. */
export interface WatchSpec {
  type: ResourceType;
  /** Only objects labelled managed-by retrokube. */
  managedOnly?: boolean;
  filter?: InformerFilter;
  /** Keys (namespace/name) of the primary objects to reconcile when `obj` changes. */
  map(obj: KubeObject, primary: Informer<KubeObject>): string[];
}

export interface ControllerDefinition {
  name: string;
  primary: ResourceType;
  /** Child types; events on them wake the owner named by their controller ownerReference. */
  owns: ResourceType[];
  /**
   * Owned types whose CRD may be absent (KubeVirt's VirtualMachine): the controller starts without
   * waiting for their caches, and reconcile checks `ctx.owned(t).hasSynced` / `.absent` before use.
   */
  optionalOwns?: ResourceType[];
  /** Other kinds whose changes wake primaries (Events, EndpointSlices, ...). */
  watches?: WatchSpec[];
  reconcile(ctx: ReconcileContext, key: ObjectKeyRef): Promise<ReconcileResult | undefined>;
  concurrency?: number;
}

export interface ControllerDeps {
  client: KubeClient;
  recorder: EventRecorder;
  metrics: OperatorMetrics;
  informer(
    type: ResourceType,
    managedOnly: boolean,
    filter?: InformerFilter,
    optional?: boolean,
  ): Informer<KubeObject>;
}

export function splitKey(key: string): ObjectKeyRef {
  const i = key.indexOf('/');
  return i < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

export class Controller {
  readonly def: ControllerDefinition;
  readonly queue: WorkQueue<string>;
  private readonly deps: ControllerDeps;
  private readonly log: Logger;
  private workers: Promise<void> | undefined;
  private readonly primary: Informer<KubeObject>;
  private readonly ownedInformers = new Map<string, Informer<KubeObject>>();
  private readonly watchedInformers = new Map<string, Informer<KubeObject>>();
  /** Objects as returned by our own writes, until the informer catches up with them. */
  private readonly written = new Map<string, KubeObject>();

  constructor(def: ControllerDefinition, deps: ControllerDeps) {
    this.def = def;
    this.deps = deps;
    this.log = logger('controller', { controller: def.name });
    const m = deps.metrics;
    this.queue = new WorkQueue<string>(undefined, {
      onDepth: (d) => m.queueDepth.set({ name: def.name }, d),
      onAdd: () => m.queueAdds.inc({ name: def.name }),
      onRetry: () => m.queueRetries.inc({ name: def.name }),
    });
    m.queueDepth.set({ name: def.name }, 0);

    // Watch setup: the primary kind, and each owned kind mapped back to its controller owner.
    this.primary = deps.informer(def.primary, false);
    this.primary.on((type, obj) => {
      this.forgetWritten(def.primary, obj, type === 'delete');
      this.queue.add(`${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, priorityOf(type));
    });
    const group = def.primary.group;
    const optional = new Set((def.optionalOwns ?? []).map(typeId));
    for (const t of [...def.owns, ...(def.optionalOwns ?? [])]) {
      const inf = deps.informer(t, true, undefined, optional.has(typeId(t)));
      this.ownedInformers.set(typeId(t), inf);
      inf.on((type, obj) => {
        this.forgetWritten(t, obj, type === 'delete');
        const owner = controllerOf(obj);
        if (!owner || owner.kind !== def.primary.kind || owner.apiVersion.split('/')[0] !== group) return;
        this.queue.add(`${obj.metadata.namespace ?? ''}/${owner.name}`, priorityOf(type));
      });
    }
    for (const w of def.watches ?? []) {
      const inf = deps.informer(w.type, !!w.managedOnly, w.filter);
      this.watchedInformers.set(typeId(w.type), inf);
      inf.on((type, obj) => {
        for (const key of w.map(obj, this.primary)) this.queue.add(key, priorityOf(type));
      });
    }
  }

  get informers(): Informer<KubeObject>[] {
    return [this.primary, ...this.ownedInformers.values(), ...this.watchedInformers.values()];
  }

  /** The caches this controller waits for before its workers start (all but optionalOwns). */
  get requiredInformers(): Informer<KubeObject>[] {
    const optional = new Set((this.def.optionalOwns ?? []).map((t) => this.ownedInformers.get(typeId(t))));
    return this.informers.filter((i) => !optional.has(i));
  }

  /** Starts the workers; the manager starts and syncs the informers first. */
  start(): void {
    const concurrency = this.def.concurrency ?? LIMITS.concurrency;
    this.workers = runWorkers(this.queue, concurrency, (key) => this.process(key));
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  private informerFor(t: ResourceType): Informer<KubeObject> {
    if (typeId(t) === typeId(this.def.primary)) return this.primary;
    const inf = this.ownedInformers.get(typeId(t));
    if (!inf) throw new Error(`controller ${this.def.name} does not own ${t.plural}.${t.group}`);
    return inf;
  }

  /** Drops our copy once the informer has caught up with it (or the object is gone). */
  private forgetWritten(t: ResourceType, obj: KubeObject, deleted: boolean): void {
    const id = `${typeId(t)}|${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
    const mine = this.written.get(id);
    if (mine && (deleted || !newerThan(mine, obj))) this.written.delete(id);
  }

  private remember(t: ResourceType, obj: KubeObject): void {
    dropManagedFields(obj); // as in the informer caches: large, never read
    trimForCache(obj); // likewise (cache-trim.ts)
    this.written.set(`${typeId(t)}|${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, obj);
  }

  private cached<T extends KubeObject>(t: ResourceType, namespace: string, name: string): T | undefined {
    const fromCache = this.informerFor(t).get(namespace || undefined, name);
    const id = `${typeId(t)}|${namespace}/${name}`;
    const mine = this.written.get(id);
    if (!mine) return fromCache as T | undefined;
    if (!fromCache || newerThan(mine, fromCache)) return mine as T;
    this.written.delete(id); // the informer has caught up
    return fromCache as T;
  }

  private context(key: string): ReconcileContext {
    const { client } = this.deps;
    const log = this.log.child({ object: key });
    return {
      cached: (t, ns, name) => this.cached(t, ns, name),
      client,
      recorder: this.deps.recorder,
      log,
      primary: this.primary,
      owned: (t) => {
        const inf = this.ownedInformers.get(typeId(t));
        if (!inf) throw new Error(`controller ${this.def.name} does not own ${t.plural}.${t.group}`);
        return inf;
      },
      watched: (t) => {
        const inf = this.watchedInformers.get(typeId(t));
        if (!inf) throw new Error(`controller ${this.def.name} does not watch ${t.plural}.${t.group}`);
        return inf;
      },
      applyIfChanged: async <T extends KubeObject>(
        type: ResourceType,
        desired: KubeObject,
        observed: KubeObject | undefined,
      ) => {
        const stamped = withAppliedHash(desired);
        if (observed && isSubset(stamped, observed)) return { object: observed as T, wrote: false };
        const object = await client.apply<T>(type, stamped, FIELD_MANAGER);
        this.remember(type, object);
        log.debug({ kind: type.kind, name: desired.metadata.name }, 'Applied child');
        return { object, wrote: true };
      },
      applyStatusIfChanged: async (type, observed, status) => {
        if (isSubset(status, observed.status ?? {})) return false;
        const saved = await client.apply<KubeObject>(
          type,
          { metadata: { name: observed.metadata.name, namespace: observed.metadata.namespace }, status },
          FIELD_MANAGER,
          { subresource: 'status' },
        );
        this.remember(type, saved);
        return true;
      },
    };
  }

  private async process(key: string): Promise<void> {
    const m = this.deps.metrics;
    const end = m.reconcileTime.startTimer({ controller: this.def.name });
    let result = 'success';
    try {
      const r = await this.def.reconcile(this.context(key), splitKey(key));
      this.queue.forget(key);
      if (r?.requeueAfterMs !== undefined && r.requeueAfterMs >= 0) {
        result = 'requeue_after';
        this.queue.addAfter(key, r.requeueAfterMs);
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 409) {
        result = 'conflict';
        this.log.debug({ object: key, err: err.message }, 'Conflict; requeued');
        this.queue.addRateLimited(key);
      } else if (err instanceof ApiError && err.retryAfterMs !== undefined) {
        // The server said when to come back (429 from API Priority and Fairness, a 503 while it
        // starts): not sooner, and not counted as the object's fault beyond the usual backoff.
        result = 'error';
        m.reconcileErrors.inc({ controller: this.def.name });
        this.log.debug(
          { object: key, err: err.message, retryAfterMs: err.retryAfterMs },
          'Server busy; requeued',
        );
        this.queue.addRateLimited(key, err.retryAfterMs);
      } else if (err instanceof TerminalError) {
        result = 'error';
        m.reconcileErrors.inc({ controller: this.def.name });
        this.queue.forget(key);
        this.log.error({ object: key, err: err.message }, 'Reconcile failed for good; waiting for a change');
      } else {
        result = 'error';
        m.reconcileErrors.inc({ controller: this.def.name });
        this.log.error(
          {
            key,
            err: err instanceof Error ? err.message : String(err),
            retries: this.queue.numRequeues(key),
          },
          'Reconcile failed; retrying with backoff',
        );
        this.queue.addRateLimited(key);
      }
    } finally {
      end();
      m.reconcileTotal.inc({ controller: this.def.name, result });
    }
  }
}

/** True when `a` has a higher resourceVersion than `b` (numeric where both are numbers, as on etcd and kine). */
function newerThan(a: KubeObject, b: KubeObject): boolean {
  const ra = a.metadata.resourceVersion ?? '';
  const rb = b.metadata.resourceVersion ?? '';
  if (/^\d+$/.test(ra) && /^\d+$/.test(rb)) return BigInt(ra) > BigInt(rb);
  return false; // opaque versions: trust the informer
}

/** A change is worth acting on before the polls; a resync is a poll. */
const priorityOf = (type: InformerEventType): Priority => (type === 'resync' ? 'low' : 'high');

export function typeId(t: ResourceType): string {
  return `${t.plural}.${t.group}/${t.version}`;
}
