import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Each case runs in a fresh Node: the flag is process-wide and one-way.
const MODULE = fileURLToPath(new URL('./young-heap.ts', import.meta.url));
const churn = (keep: boolean) => `
  const { keepYoungHeapSmall, youngHeapBytes } = await import(${JSON.stringify(MODULE)});
  ${keep ? 'keepYoungHeapSmall();' : ''}
  const live = [];
  for (let i = 0; i < 300_000; i++) {
    const o = JSON.parse(JSON.stringify({ name: 'x'.repeat(64) + i, spec: [1, 2, { i }] }));
    if (i % 4 === 0) live.push(o);
  }
  console.log(youngHeapBytes());`;
const newSpaceMiB = (keep: boolean) =>
  Number(execFileSync(process.execPath, ['--input-type=module', '-e', churn(keep)], { encoding: 'utf8' })) /
  2 ** 20;

describe('keepYoungHeapSmall: the operator new space does not grow with its heap', () => {
  it('under the same churn, the new space stays at its initial size with it and grows without it', () => {
    const small = newSpaceMiB(true);
    const grown = newSpaceMiB(false);
    expect(small).toBeLessThanOrEqual(4);
    expect(grown).toBeGreaterThanOrEqual(16); // else this test no longer shows anything
  });
});
