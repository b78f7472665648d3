import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../api/generate.ts';
import { generatedFiles } from './generate.ts';

describe('generated CRDs and RBAC rules', () => {
  it('the committed files equal what `npm run crds` writes (run it after changing a schema or a rule)', () => {
    for (const [path, text] of generatedFiles()) {
      let onDisk = '';
      try {
        onDisk = readFileSync(join(REPO_ROOT, path), 'utf8');
      } catch {
        // missing: reported by the assertion below
      }
      expect(onDisk, `${path} is stale or missing: run \`npm run crds\``).toBe(text);
    }
  });
});
