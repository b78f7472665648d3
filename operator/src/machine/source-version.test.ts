import { describe, expect, it } from 'vitest';
import { hashSources, sourceFiles, sourceVersion } from './source-version.ts';

describe('source versions (the key of the caches that outlive a process)', () => {
  it('cover a module and everything of the folder it imports, transitively: a change anywhere is another version', () => {
    const src: Record<string, string> = {
      'a.ts': "import { b } from './b.ts';\nimport type { T } from './t.ts';",
      'b.ts': "import { c } from './c.ts';\nimport fs from 'node:fs';",
      'c.ts': "import { b } from './b.ts'; // a cycle is read once\nexport const c = 1;",
      't.ts': 'export type T = number;',
    };
    const read = (n: string) => src[n];
    expect(sourceFiles('a.ts', read).map((f) => f.name)).toEqual(['a.ts', 'b.ts', 't.ts', 'c.ts']);
    const before = hashSources(sourceFiles('a.ts', read));
    src['c.ts'] = src['c.ts'].replace('1', '2');
    expect(hashSources(sourceFiles('a.ts', read))).not.toBe(before);
  });

  it("the machine's version covers the CPU, the translator, the FPU and the devices", () => {
    const names = sourceFiles('machine.ts').map((f) => f.name);
    for (const n of ['machine.ts', 'cpu.ts', 'jit.ts', 'fpu.ts', 'sd-card.ts', 'nrf24.ts', 'ps2.ts'])
      expect(names).toContain(n);
    expect(sourceVersion('machine.ts')).toMatch(/^[0-9a-f]{16}$/);
    expect(sourceVersion('missing-module.ts')).toBeNull();
  });
});
