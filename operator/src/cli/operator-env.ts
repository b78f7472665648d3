// The environment the operator's process starts with in its pod (the chart's Deployment sets it;
// the operator benchmarks start it the same way). glibc reads these before any JavaScript runs, so
// they cannot be set by `retrokube operator` itself.
//
// MALLOC_ARENA_MAX=2: glibc gives each thread that mallocs its own arena (up to 8 per core), and
// Node's threads (V8's compiler and GC workers, libuv's pool) keep memory in theirs that is never
// handed back. Side by side with 150 OberonKubes each (bench/operator/rss-variants.ts, 2026-12-03,
// bench/results/operator-rss-variants.json: main's operator / this one with two arenas): RSS at rest
// 150.1 → 140.6 MiB, at start 113.3 → 106.1 MiB, the same CPU. Fixing glibc's mmap and trim
// thresholds too saved 1.5–3 MiB more in two runs, capping V8's semi-spaces at 1 MiB nothing at rest.
export const OPERATOR_ENV = {
  MALLOC_ARENA_MAX: '2',
} as const;
