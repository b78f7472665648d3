// What Node's compile cache did for each module of a process, from Node's own account of it
// (NODE_DEBUG_NATIVE=COMPILE_CACHE on stderr; Node 24's wording): whether a TypeScript module's
// stripped source and a module's V8 code came from the cache. Shared by the tests of the image's
// baked cache (test/unit/image-compile-cache.test.ts, test/cluster/image.test.ts).

export interface CacheUse {
  /** TypeScript modules: true when the stripped source came from the cache, false when stripped again. */
  stripped: Map<string, boolean>;
  /** ES modules: true when V8 accepted the cached code, false when it compiled the module. */
  compiled: Map<string, boolean>;
}

// Matched anywhere, not per line: Node's native debug lines and the process's other writes to stderr
// can share a line now and then (seen: a module's "was accepted" line missing from the line start).
const STRIPPED_HIT =
  /\[compile cache\] retrieving transpile cache for StrippedTypeScript (file:\S+?)\.\.\.success/g;
const STRIPPED_MISS = /\[compile cache\] no transpile cache for StrippedTypeScript (file:\S+)/g;
const COMPILED = /\[compile cache\] V8 code cache for ESM (file:\S+) was (\w+)/g;

export function cacheUse(stderr: string): CacheUse {
  const stripped = new Map<string, boolean>();
  const compiled = new Map<string, boolean>();
  for (const m of stderr.matchAll(STRIPPED_HIT)) stripped.set(m[1] as string, true);
  for (const m of stderr.matchAll(STRIPPED_MISS)) stripped.set(m[1] as string, false);
  for (const m of stderr.matchAll(COMPILED)) compiled.set(m[1] as string, m[2] === 'accepted');
  return { stripped, compiled };
}
