// package.json's allowScripts (npm 11.16+) names every dependency with an install script, so
// `npm install` runs them knowingly and prints no "not yet covered by allowScripts" advisory: the
// node package's script installs the Node.js 24 every script runs on; esbuild's checks its binary.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const read = (f: string) => JSON.parse(readFileSync(join(ROOT, f), 'utf8'));

describe('package.json', () => {
  it('allowScripts covers exactly the locked packages that have install scripts', () => {
    const lock = read('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = Object.entries(lock.packages)
      .filter(([, p]) => p.hasInstallScript)
      .map(([path]) => path.replace(/^.*node_modules\//, ''))
      .sort();
    expect(withScripts.length).toBeGreaterThan(0);
    const allowed = read('package.json').allowScripts as Record<string, boolean>;
    expect(Object.keys(allowed).sort()).toEqual(withScripts);
    expect(Object.values(allowed).every((v) => v === true)).toBe(true);
  });
});
