// A rate-limited work queue with client-go semantics, driving level-triggered reconciles.
//
// - A key waits at most once in the queue (dedup): ten events for one object make one reconcile.
// - A key is never handed to two workers at once: a key added while it is being processed is
//   marked dirty and queued again when its worker calls done().
// - addAfter(key, ms) delays a key (requeue-after); the earliest requested time wins.
// - addRateLimited(key) delays a key by its per-key exponential backoff (failures), combined with a
//   global token bucket; forget(key) resets the backoff after a success.
// - Two priorities (controller-runtime's priority queue): a key added for a change (an informer
//   event) is handed out before keys that come back on their own (requeue-after, retries,
//   resyncs): with 1,000 OberonKubes each re-examined every 2 s, a changed one otherwise waited
//   behind ~1,000 polls (seconds). A waiting low key that gets an event moves up.
// - The queue does not run workers itself; `runWorkers` below pulls with bounded concurrency.

export const LIMITS = {
  baseDelayMs: 500, // first retry after a failure: long enough not to hammer a struggling API server
  maxDelayMs: 5 * 60_000, // backoff cap: a broken object is still retried every 5 minutes
  bucketQps: 10, // global retry budget like client-go's default bucket (10 qps)
  bucketBurst: 100, // burst of retries allowed before the bucket throttles
} as const;

export interface RateLimiterOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  bucketQps?: number;
  bucketBurst?: number;
}

/** Per-key exponential backoff max'ed with a global token bucket (client-go's default controller limiter). */
export class RateLimiter<K> {
  private readonly failures = new Map<K, number>();
  private readonly base: number;
  private readonly max: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;
  private tokens: number;
  private last: number;

  constructor(opts: RateLimiterOptions = {}, now: () => number = Date.now) {
    this.base = opts.baseDelayMs ?? LIMITS.baseDelayMs;
    this.max = opts.maxDelayMs ?? LIMITS.maxDelayMs;
    this.qps = opts.bucketQps ?? LIMITS.bucketQps;
    this.burst = opts.bucketBurst ?? LIMITS.bucketBurst;
    this.tokens = this.burst;
    this.now = now;
    this.last = now();
  }

  /** Delay before the next attempt of `key`; counts one more failure. */
  when(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const backoff = Math.min(this.max, this.base * 2 ** Math.min(n, 40));
    return Math.max(backoff, this.bucketDelay());
  }

  private bucketDelay(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  numRequeues(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: K): void {
    this.failures.delete(key);
  }
}

/** 'high': something changed; 'low': the key comes back by itself (poll, retry, resync). */
export type Priority = 'high' | 'low';

export interface QueueHooks {
  /** Called whenever the number of waiting keys changes (for a queue-depth gauge). */
  onDepth?: (depth: number) => void;
  onAdd?: () => void;
  onRetry?: () => void;
}

export class WorkQueue<K = string> {
  private readonly queue: K[] = []; // high priority, FIFO
  private readonly low: K[] = []; // low priority, FIFO; may hold stale entries (see lowKeys)
  /** Dirty keys whose only request is low: an entry of `low` counts only while its key is here. */
  private readonly lowKeys = new Set<K>();
  private readonly dirty = new Set<K>(); // waiting to be processed (in a queue, or re-added while processing)
  private readonly processing = new Set<K>();
  private readonly delayed = new Map<K, { at: number; timer: ReturnType<typeof setTimeout> }>();
  private readonly waiters: Array<(k: K | undefined) => void> = [];
  private shuttingDown = false;
  readonly limiter: RateLimiter<K>;
  private readonly hooks: QueueHooks;

  constructor(limiter: RateLimiter<K> = new RateLimiter<K>(), hooks: QueueHooks = {}) {
    this.limiter = limiter;
    this.hooks = hooks;
  }

  /** Number of keys waiting to be handed out (not counting delayed or in-process keys). */
  get length(): number {
    // Dirty keys that are not being processed; `processing` holds at most one key per worker.
    let busy = 0;
    for (const k of this.processing) if (this.dirty.has(k)) busy++;
    return this.dirty.size - busy;
  }

  get processingCount(): number {
    return this.processing.size;
  }

  get delayedCount(): number {
    return this.delayed.size;
  }

  add(key: K, priority: Priority = 'high'): void {
    if (this.shuttingDown) return;
    this.hooks.onAdd?.();
    if (this.dirty.has(key)) {
      // Already waiting (dedup); an event lifts a key that waited at low priority.
      if (priority === 'high' && this.lowKeys.delete(key) && !this.processing.has(key)) {
        this.queue.push(key);
        this.hooks.onDepth?.(this.length);
      }
      return;
    }
    this.dirty.add(key);
    if (priority === 'low') this.lowKeys.add(key);
    if (this.processing.has(key)) return; // re-queued by done()
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.lowKeys.delete(key);
      this.processing.add(key);
      waiter(key);
      return;
    }
    (priority === 'low' ? this.low : this.queue).push(key);
    this.hooks.onDepth?.(this.length);
  }

  /** Add `key` after `ms`; if it is already scheduled earlier, keep the earlier time. */
  addAfter(key: K, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key, 'low');
      return;
    }
    const at = Date.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key, 'low');
    }, ms);
    timer.unref?.();
    this.delayed.set(key, { at, timer });
  }

  /** Retries `key` after its backoff, or after `atLeastMs` (a server's Retry-After) if longer. */
  addRateLimited(key: K, atLeastMs = 0): void {
    this.hooks.onRetry?.();
    this.addAfter(key, Math.max(this.limiter.when(key), atLeastMs));
  }

  forget(key: K): void {
    this.limiter.forget(key);
  }

  numRequeues(key: K): number {
    return this.limiter.numRequeues(key);
  }

  /** Next key to process; resolves undefined once the queue shuts down. */
  get(): Promise<K | undefined> {
    const key = this.next();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.lowKeys.delete(key);
      this.processing.add(key);
      this.hooks.onDepth?.(this.length);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The next key to hand out: high first; low entries whose key moved up or was handed out are skipped. */
  private next(): K | undefined {
    const high = this.queue.shift();
    if (high !== undefined) return high;
    for (let k = this.low.shift(); k !== undefined; k = this.low.shift()) {
      if (this.lowKeys.has(k) && !this.processing.has(k)) return k;
    }
    return undefined;
  }

  /** Marks `key` as finished; if it was added meanwhile, it goes back to the queue (same priority). */
  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      const priority = this.lowKeys.delete(key) ? 'low' : 'high';
      this.add(key, priority);
    }
  }

  shutDown(): void {
    this.shuttingDown = true;
    for (const d of this.delayed.values()) clearTimeout(d.timer);
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }
}

/**
 * Runs `concurrency` workers that pull keys and call `handle`. The handler's promise decides
 * nothing about requeueing (the caller does that); `handle` must not throw, but if it does the
 * error goes to `onError` and the worker keeps going. Resolves when the queue shuts down and
 * every worker has finished its current key.
 */
export async function runWorkers<K>(
  queue: WorkQueue<K>,
  concurrency: number,
  handle: (key: K) => Promise<void>,
  onError: (key: K, err: unknown) => void = () => {},
): Promise<void> {
  const worker = async () => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        await handle(key);
      } catch (err) {
        onError(key, err);
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}
