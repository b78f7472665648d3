import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { spreadResync } from './resync.ts';

describe('spreadResync: a resync spread over its period', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('emits every object once per period, a slice a tick, never all at once', () => {
    const cache = new Map(Array.from({ length: 100 }, (_, i) => [`k${i}`, i] as const));
    const seen: number[] = [];
    const stop = spreadResync(cache, 10_000, (v) => seen.push(v), 1_000);
    vi.advanceTimersByTime(1_000);
    expect(seen).toHaveLength(10); // a tenth of the cache in the first tick
    vi.advanceTimersByTime(9_000);
    expect([...seen].sort((a, b) => a - b)).toEqual([...cache.values()]);
    vi.advanceTimersByTime(10_000);
    expect(seen).toHaveLength(200); // the next period: each once more
    stop();
    vi.advanceTimersByTime(20_000);
    expect(seen).toHaveLength(200);
  });

  /** A cache of a → 1, b → 2 resynced every `periodMs` (ticks of 1 s); what it emitted so far. */
  const twoObjects = (periodMs: number) => {
    const cache = new Map([
      ['a', 1],
      ['b', 2],
    ]);
    const seen: number[] = [];
    return { cache, seen, stop: spreadResync(cache, periodMs, (v) => seen.push(v), 1_000) };
  };

  it('skips objects gone since the pass began and takes new ones in the next pass', () => {
    const { cache, seen, stop } = twoObjects(2_000);
    vi.advanceTimersByTime(1_000);
    expect(seen).toEqual([1]);
    cache.delete('b');
    cache.set('c', 3);
    vi.advanceTimersByTime(1_000);
    expect(seen).toEqual([1]); // b went, c waits for the next pass
    vi.advanceTimersByTime(2_000);
    expect(seen).toEqual([1, 1, 3]);
    stop();
  });

  it('a period shorter than two ticks emits the whole cache each period', () => {
    const { seen, stop } = twoObjects(50);
    vi.advanceTimersByTime(50);
    expect(seen).toEqual([1, 2]);
    stop();
  });
});
