// Every verb starts from main.ts, which loads the module of the verb it runs (verbs.ts, `import()`
// per group): whatever that module imports statically loads for the verb's role. The air relay runs in a pod limited to 64Mi; with the
// Kubernetes client loaded at start (its generated API: ~60 MB more) it was OOM-killed on the real
// node. Verbs that need the client load it on use (`await import`), and this test keeps it so.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// Static imports and re-exports that carry values (`import type` is erased; `import()` is on use).
const STATIC = /^\s*(?:import|export)\s+(?!type\s)(?:[\w*${},\s]+?\s+from\s+)?['"]([^'"]+)['"]/gm;

/** Every module main.ts and the verbs' modules load at start (relative .ts paths and package names). */
function startupModules(): Set<string> {
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    for (const m of code.matchAll(STATIC)) {
      const spec = m[1] as string;
      if (spec.startsWith('.')) walk(resolve(dirname(file), spec));
      else seen.add(spec);
    }
  };
  walk(join(SRC, 'cli/main.ts'));
  const verbs = readFileSync(join(SRC, 'cli/verbs.ts'), 'utf8');
  for (const m of verbs.matchAll(/import\('(\.[^']+)'\)/g)) walk(resolve(SRC, 'cli', m[1] as string));
  return seen;
}

describe('what every verb loads at start', () => {
  it('not the Kubernetes client (verbs that need it import it on use)', () => {
    const mods = startupModules();
    expect(mods.size).toBeGreaterThan(20); // the walk found main.ts's verbs
    expect([...mods].filter((m) => m.startsWith('@kubernetes/') || m.endsWith('runtime/client.ts'))).toEqual(
      [],
    );
  });
});
