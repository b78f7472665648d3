#!/usr/bin/env node
// Fills Node's compile cache ($NODE_COMPILE_CACHE) with every module `retrokube operator` loads until
// it has started, without starting it: run when the image is built (the Dockerfile's compile-cache
// stage; hack/build-image.sh), by the image's own Node, as the image's user, on the files the image
// holds, so the operator's first start in a pod finds them type-stripped and compiled (#32: the
// TypeScript stripper alone is ~25 MiB of RSS at start, and it never loads when every module hits).
// With NODE_COMPILE_CACHE_PORTABLE=1 Node keys each entry by the module's path relative to the cache
// folder, so a copy of the tree finds it too (tests, bench/operator); but a TypeScript module's entry
// keeps the path it was stripped at (Node appends `//# sourceURL=<file>`), which its stack traces
// then show: the image's cache is made at the image's own paths (/app).
// Node reads an entry only under its own version, architecture, V8 flags and uid (one subfolder
// each) and only while the module's source hash matches: a cache made by another Node, for another
// user or for other sources is simply not used (test/unit/image-compile-cache.test.ts).
//   NODE_COMPILE_CACHE=<dir> NODE_COMPILE_CACHE_PORTABLE=1 node operator/bin/bake-compile-cache.js
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { flushCompileCache, getCompileCacheDir } from 'node:module';
import { fileURLToPath } from 'node:url';

const dir = getCompileCacheDir();
if (!dir) {
  process.stderr.write(
    'bake-compile-cache: no compile cache (set NODE_COMPILE_CACHE to a writable folder)\n',
  );
  process.exit(1);
}
// The image's ENTRYPOINT (main.ts) up to the operator verb: `operator --help` loads main.ts, the
// command tree and the verb's module, and its Node writes their entries as it exits.
const main = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
// Pipes, not 'ignore': hack/build-image.sh bakes in the image's root, which has no /dev/null.
const help = spawnSync(process.execPath, [main, 'operator', '--help'], {
  stdio: ['pipe', 'pipe', 'inherit'],
  input: '',
});
if (help.status !== 0) {
  const why = help.error ? help.error.message : `exit ${help.status ?? help.signal}`;
  process.stderr.write(`bake-compile-cache: ${main} operator --help failed: ${why}\n`);
  process.exit(1);
}
// Then what the verb's action loads before it starts anything (operator-run.ts: the controllers, the
// runtime, the packages they import). Nothing runs: importing them starts no timer and no socket.
await import('../src/cli/operator-run.ts');
flushCompileCache();
const entries = readdirSync(dir).length;
process.stdout.write(`bake-compile-cache: ${entries} entries in ${dir}\n`);
