import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateLimiter, runWorkers, WorkQueue } from './workqueue.ts';

describe('work queue', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('hands out a key added many times only once (dedup)', async () => {
    const q = new WorkQueue<string>();
    for (let i = 0; i < 10; i++) q.add('ns/a');
    q.add('ns/b');
    expect(q.length).toBe(2);
    expect(await q.get()).toBe('ns/a');
    expect(await q.get()).toBe('ns/b');
    expect(q.length).toBe(0);
  });

  it('never gives one key to two workers: a key re-added while processing waits for done()', async () => {
    const q = new WorkQueue<string>();
    q.add('k');
    const first = await q.get();
    expect(first).toBe('k');
    q.add('k'); // an event arrives while the worker reconciles
    q.add('k');
    expect(q.length).toBe(0); // not handed out again while processing
    let second: string | undefined;
    void q.get().then((k) => {
      second = k;
    });
    await Promise.resolve();
    expect(second).toBeUndefined();
    q.done('k');
    await Promise.resolve();
    expect(second).toBe('k'); // exactly once more
    q.done('k');
    expect(q.length).toBe(0);
  });

  it('hands out keys added for a change before keys that came back by themselves (polls, retries)', async () => {
    const q = new WorkQueue<string>();
    for (let i = 0; i < 3; i++) q.add(`ns/poll-${i}`, 'low');
    q.addAfter('ns/later', 0); // a requeue-after that is due: low
    q.add('ns/changed'); // an informer event: high
    expect(q.length).toBe(5);
    expect(await q.get()).toBe('ns/changed');
    expect(await q.get()).toBe('ns/poll-0');
    q.done('ns/poll-0');
    q.done('ns/changed');
    // A key waiting at low priority that gets an event moves up, and is handed out only once.
    q.add('ns/poll-2');
    expect(await q.get()).toBe('ns/poll-2');
    expect(await q.get()).toBe('ns/poll-1');
    expect(await q.get()).toBe('ns/later');
    expect(q.length).toBe(0);
    let more: string | undefined;
    void q.get().then((k) => {
      more = k;
    });
    await Promise.resolve();
    expect(more).toBeUndefined(); // the stale low entry of ns/poll-2 was not handed out again
  });

  it('a key re-added while processing comes back with the priority it was re-added with', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    expect(await q.get()).toBe('a');
    q.add('a', 'low'); // requeued by itself while its worker runs
    q.add('b', 'low');
    q.done('a');
    q.add('c'); // a change arrives after
    expect(await q.get()).toBe('c');
    expect(await q.get()).toBe('b');
    expect(await q.get()).toBe('a');
  });

  it('requeue-after delivers the key once the delay passes, keeping the earliest time', async () => {
    const q = new WorkQueue<string>();
    q.addAfter('k', 5000);
    q.addAfter('k', 1000); // earlier wins
    q.addAfter('k', 9000); // later is ignored
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(999);
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.length).toBe(1);
    vi.advanceTimersByTime(10_000);
    expect(q.length).toBe(1); // the later timers were cancelled or ignored
  });

  it('backs off exponentially per key on failure and resets on forget', () => {
    const q = new WorkQueue<string>(
      new RateLimiter({ baseDelayMs: 100, maxDelayMs: 1000, bucketBurst: 1000 }),
    );
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) delays.push(q.limiter.when('k'));
    expect(delays).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(q.limiter.when('other')).toBe(100); // per key
    q.forget('k');
    expect(q.numRequeues('k')).toBe(0);
    expect(q.limiter.when('k')).toBe(100);
  });

  it('addRateLimited delays the key by its backoff', () => {
    const q = new WorkQueue<string>(
      new RateLimiter({ baseDelayMs: 100, maxDelayMs: 1000, bucketBurst: 1000 }),
    );
    q.addRateLimited('k');
    vi.advanceTimersByTime(99);
    expect(q.length).toBe(0);
    vi.advanceTimersByTime(1);
    expect(q.length).toBe(1);
  });

  it('the global token bucket throttles a burst of failures across keys', () => {
    const limiter = new RateLimiter<string>({ baseDelayMs: 1, bucketQps: 10, bucketBurst: 2 }, () => 0);
    expect(limiter.when('a')).toBe(1);
    expect(limiter.when('b')).toBe(1);
    expect(limiter.when('c')).toBe(100); // bucket empty: 1 token / 10 qps
    expect(limiter.when('d')).toBe(200);
  });

  it('runs at most N keys at once and every added key exactly once', async () => {
    const q = new WorkQueue<number>();
    let running = 0;
    let peak = 0;
    const seen: number[] = [];
    const workers = runWorkers(q, 3, async (k) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 10));
      seen.push(k);
      running--;
    });
    for (let i = 0; i < 20; i++) q.add(i);
    await vi.advanceTimersByTimeAsync(200);
    q.shutDown();
    await workers;
    expect(peak).toBe(3);
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('a throwing handler does not stop its worker', async () => {
    const q = new WorkQueue<string>();
    const errors: string[] = [];
    const done: string[] = [];
    const workers = runWorkers(
      q,
      1,
      async (k) => {
        if (k === 'bad') throw new Error('boom');
        done.push(k);
      },
      (k) => errors.push(k),
    );
    q.add('bad');
    q.add('good');
    await vi.advanceTimersByTimeAsync(0);
    q.shutDown();
    await workers;
    expect(errors).toEqual(['bad']);
    expect(done).toEqual(['good']);
  });

  it('reports queue depth changes', () => {
    const depths: number[] = [];
    const q = new WorkQueue<string>(undefined, { onDepth: (d) => depths.push(d) });
    q.add('a');
    q.add('b');
    void q.get();
    expect(depths).toEqual([1, 2, 1]);
  });

  it('after shutdown, get() resolves undefined and adds are ignored', async () => {
    const q = new WorkQueue<string>();
    q.addAfter('k', 100);
    q.shutDown();
    q.add('x');
    expect(await q.get()).toBeUndefined();
    vi.advanceTimersByTime(200);
    expect(q.length).toBe(0);
  });
});
