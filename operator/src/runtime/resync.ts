// An informer's resync spread over its period. Emitting every cached object at once made a burst
// every 10 minutes: at 1,000 OberonKubes all the informers, started together, resynced ~18,000
// objects in the same second — 4,000 machine reconciles, 3,000 GETs — and a change made then
// waited behind it (#32: a change's p99 of 1 s at 1,000 clusters where its p50 was 29 ms, and the
// overload phase's 3,021 requests). Here each tick emits the next slice of the cache: every object
// is still re-examined once per period, at an even rate instead of all at once.

export const RESYNC_LIMITS = {
  tickMs: 1_000, // one slice a second: 1,000 clusters' 4,000 machines are 7 reconciles a tick at 10 min
} as const;

/**
 * Calls `emit` for every value of `cache` once per `periodMs`, a slice each `tickMs`; a period
 * shorter than two ticks emits the whole cache each period, as before. Returns the stop function.
 */
export function spreadResync<K, V>(
  cache: Map<K, V>,
  periodMs: number,
  emit: (value: V) => void,
  tickMs: number = RESYNC_LIMITS.tickMs,
): () => void {
  const slices = Math.max(1, Math.floor(periodMs / tickMs));
  const every = slices === 1 ? periodMs : tickMs;
  let pass: K[] = [];
  let at = 0;
  let perTick = 0;
  const timer = setInterval(() => {
    if (at >= pass.length) {
      // A new pass over what is cached now; objects added meanwhile come in the next one.
      pass = [...cache.keys()];
      at = 0;
      perTick = Math.ceil(pass.length / slices);
    }
    for (const end = Math.min(pass.length, at + perTick); at < end; at++) {
      const v = cache.get(pass[at] as K);
      if (v !== undefined) emit(v);
    }
  }, every);
  timer.unref();
  return () => clearInterval(timer);
}
