// The operator's young generation, kept small. V8 grows its semi-spaces with the heap: with 1,000
// OberonKubes the operator's new space reached 128 MiB committed (measured through the inspector:
// 24 MiB of it in use), more than every informer cache together (~45 MiB), and RSS went past
// 250 MiB. `--max-semi-space-size` is read only when the heap is made (NODE_OPTIONS, argv), which
// the image's ENTRYPOINT shares with every verb; the growth factor is read at each growth, so a
// process may stop its own new space from growing at any time, here the operator alone.
import v8 from 'node:v8';

export const YOUNG_HEAP_LIMITS = {
  // 1: the semi-spaces keep their initial 1 MiB: more frequent scavenges (a few % CPU in a busy
  // operator) for ~100 MiB less RSS at 1,000 OberonKubes.
  semiSpaceGrowthFactor: 1,
  // The old space likewise: V8 lets it grow to up to 4x what survived the last full GC before the
  // next one (at 1,000 OberonKubes: 132 MiB of old space for ~70 MiB live). 50 %: a full GC once
  // the heap is 1.5x its live size. A synthetic churn of 70 MiB live: peak RSS 377 → 174 MiB for
  // +30 % CPU; the operator spends far less of its time in GC than that churn.
  heapGrowingPercent: 50,
} as const;

/**
 * Stops this process's new space from growing past what it has now (at start: 2 × 1 MiB), and its
 * old space from growing far past what is live. Both flags are read at each growth, so they work
 * when set at run time (a test checks the first).
 */
export function keepYoungHeapSmall(): void {
  v8.setFlagsFromString(`--semi-space-growth-factor=${YOUNG_HEAP_LIMITS.semiSpaceGrowthFactor}`);
  v8.setFlagsFromString(`--heap-growing-percent=${YOUNG_HEAP_LIMITS.heapGrowingPercent}`);
}

/** The new space's committed size in bytes (both semi-spaces). */
export function youngHeapBytes(): number {
  return v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}
