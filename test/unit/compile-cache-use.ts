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

export function cacheUse(stderr: string): CacheUse {
  const stripped = new Map<string, boolean>();
  const compiled = new Map<string, boolean>();
  for (const line of stderr.split('\n')) {
    let m =
      /^\[compile cache\] retrieving transpile cache for StrippedTypeScript (file:\S+?)\.\.\.success/.exec(
        line,
      );
    if (m?.[1]) stripped.set(m[1], true);
    m = /^\[compile cache\] no transpile cache for StrippedTypeScript (file:\S+)$/.exec(line);
    if (m?.[1]) stripped.set(m[1], false);
    m = /^\[compile cache\] V8 code cache for ESM (file:\S+) was (\w+)/.exec(line);
    if (m?.[1]) compiled.set(m[1], m[2] === 'accepted');
  }
  return { stripped, compiled };
}
