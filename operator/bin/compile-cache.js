// Node's compile cache for the CLI: the type-stripped and compiled TypeScript modules are kept
// between runs, so a verb starts in about a third of the time (#32). The folder is the user's cache
// ($XDG_CACHE_HOME, else ~/.cache)/retrokube/compile-cache, not Node's default in the system's temp
// folder (cleared at boot, and shared by every user of the host). $NODE_COMPILE_CACHE still names
// another, and NODE_DISABLE_COMPILE_CACHE=1 turns it off, as Node documents.
// Correct whatever the folder holds (startup.test.ts runs these cases): Node keeps one subfolder per
// Node version, architecture and V8 flags, and uses a module's entry only when the module's source
// hash and the entry's checksum match; anything else (another retrokube's code, a cut or foreign
// file) is compiled again and the entry rewritten. A folder it cannot create leaves the cache off.
import { enableCompileCache } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The folder the CLI's compile cache goes to; undefined leaves Node's choice ($NODE_COMPILE_CACHE). */
export function compileCacheDir(env = process.env, home = homedir()) {
  if (env.NODE_COMPILE_CACHE) return undefined;
  const base = env.XDG_CACHE_HOME || (home ? join(home, '.cache') : undefined);
  return base ? join(base, 'retrokube', 'compile-cache') : undefined;
}

/** Turns the cache on for every module loaded from now on; Node's result (status, directory). */
export function enableCliCompileCache() {
  return enableCompileCache?.(compileCacheDir());
}
