// The environment the operator's process starts with in its pod (the chart's Deployment sets it;
// the operator benchmarks start it the same way). glibc reads these before any JavaScript runs, so
// they cannot be set by `retrokube operator` itself.
//
// MALLOC_ARENA_MAX=2: glibc gives each thread that mallocs its own arena (up to 8 per core), and
// Node's threads (V8's compiler and GC workers, libuv's pool) keep memory in theirs that is never
// handed back. Side by side with 150 OberonKubes each (bench/operator/rss-variants.ts, 2026-12-03):
// RSS at rest 152.4 → 138.5 MiB, at start 113.6 → 106.1 MiB, the same CPU.
export const OPERATOR_ENV = {
  MALLOC_ARENA_MAX: '2',
} as const;
