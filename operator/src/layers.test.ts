// The import graph of operator/src keeps its shape (LAYOUT.md): lower layers never import higher
// ones (cli → local/controllers → subsystems → runtime/api/util), and no module imports itself
// back through others (no cycles, type-only imports included: a cycle of types is still two files
// that cannot be understood one without the other). Tests are not modules of the product and may
// reach anywhere, so *.test.ts files are left out.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = dirname(fileURLToPath(import.meta.url));

/** Rank of each top-level folder of operator/src: a file may import only from its rank or lower. */
const LAYERS: Record<string, number> = {
  util: 0,
  '.': 0, // files directly in operator/src (version.ts)
  api: 1,
  runtime: 1,
  air: 2,
  machine: 2,
  sheets: 2,
  rollout: 2,
  marketplace: 2,
  console: 2,
  controllers: 3,
  local: 3,
  cli: 4,
};

/** Module path (relative to operator/src) → the modules it imports. */
type ImportGraph = Map<string, string[]>;

const IMPORT =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[\w*${},\s]+?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** Relative imports of one source text (static, re-exports and dynamic import() of a literal). */
function relativeImports(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, ''); // an example in a comment is no import
  const out: string[] = [];
  for (const m of code.matchAll(IMPORT)) out.push((m[1] ?? m[2]) as string);
  return out;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

function readGraph(root = SRC): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of sourceFiles(root)) {
    const deps = relativeImports(readFileSync(file, 'utf8'))
      .filter((spec) => spec.endsWith('.ts'))
      .map((spec) => relative(root, resolve(dirname(file), spec)));
    graph.set(relative(root, file), [...new Set(deps)]);
  }
  return graph;
}

const layerOf = (module: string): string => (module.includes('/') ? module.split('/')[0] : '.');

/** Imports from a lower layer to a higher one, and imports of folders the table does not know. */
function layerViolations(graph: ImportGraph, layers = LAYERS): string[] {
  const out: string[] = [];
  for (const [from, deps] of graph) {
    const a = layers[layerOf(from)];
    if (a === undefined) out.push(`${from}: its folder ${layerOf(from)}/ has no layer (add it to LAYERS)`);
    for (const to of deps) {
      if (to.startsWith('..')) {
        out.push(`${from} imports ${to}, outside operator/src`);
        continue;
      }
      const b = layers[layerOf(to)];
      if (a !== undefined && b !== undefined && b > a)
        out.push(`${from} (${layerOf(from)}, layer ${a}) imports ${to} (${layerOf(to)}, layer ${b})`);
    }
  }
  return out;
}

/** Every import cycle, one per strongly connected component of more than one module (Tarjan). */
function importCycles(graph: ImportGraph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

/** The graph of top-level folders: a folder imports another when any of its modules does. */
function folderGraph(graph: ImportGraph): ImportGraph {
  const out: ImportGraph = new Map();
  for (const [from, deps] of graph) {
    const set = new Set(out.get(layerOf(from)) ?? []);
    for (const to of deps) if (layerOf(to) !== layerOf(from)) set.add(layerOf(to));
    out.set(layerOf(from), [...set].sort());
  }
  return out;
}

describe('the import graph of operator/src', () => {
  const graph = readGraph();

  it('is read from every source file (a parser that finds nothing would pass everything)', () => {
    expect(graph.size).toBeGreaterThan(150);
    expect(graph.get('cli/main.ts')?.length).toBeGreaterThan(0);
    expect(graph.get('controllers/oberonmachine.ts')).toContain('controllers/oberonmachine-render.ts');
  });

  it('has no import from a lower layer to a higher one (cli → local/controllers → subsystems → runtime/api/util)', () => {
    expect(layerViolations(graph)).toEqual([]);
  });

  it('has no import cycle between modules', () => {
    expect(importCycles(graph)).toEqual([]);
  });

  it('has no cycle between folders of one layer (say, api and runtime, or air and machine)', () => {
    expect(importCycles(folderGraph(graph))).toEqual([]);
  });
});

describe('the layering checks themselves', () => {
  it('find static, type-only, re-exported and dynamic imports', () => {
    const text = [
      "import { a } from './a.ts';",
      "import type { B } from '../b/b.ts';",
      "export { c } from './c.ts';",
      "export type { D } from './d.ts';",
      "const e = await import('../e.ts');",
      "import x from 'node:fs';",
      "import {\n  f,\n  type G,\n} from './f.ts';",
      "//   import { Machine } from './machine.ts';",
      "/* import { h } from './h.ts'; */",
    ].join('\n');
    expect(relativeImports(text)).toEqual(['./a.ts', '../b/b.ts', './c.ts', './d.ts', '../e.ts', './f.ts']);
  });

  it('report a subsystem importing the CLI, and a cycle of three', () => {
    const g: ImportGraph = new Map([
      ['local/up.ts', ['cli/kube-disk.ts', 'machine/x.ts']],
      ['cli/kube-disk.ts', ['machine/x.ts']],
      ['machine/x.ts', ['util/log.ts']],
      ['util/log.ts', []],
      ['air/a.ts', ['air/b.ts']],
      ['air/b.ts', ['air/c.ts']],
      ['air/c.ts', ['air/a.ts']],
    ]);
    expect(layerViolations(g)).toEqual([
      'local/up.ts (local, layer 3) imports cli/kube-disk.ts (cli, layer 4)',
    ]);
    expect(importCycles(g)).toEqual([['air/a.ts', 'air/b.ts', 'air/c.ts']]);
  });
});
