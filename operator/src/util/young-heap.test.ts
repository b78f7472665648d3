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

const oldSpaceChurn = (keep: boolean) => `
  const { keepYoungHeapSmall } = await import(${JSON.stringify(MODULE)});
  const v8 = await import('node:v8');
  ${keep ? 'keepYoungHeapSmall();' : ''}
  const oldSpace = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_size;
  const live = new Map();
  let peak = 0;
  for (let i = 0; i < 600_000; i++) {
    live.set(i % 60_000, JSON.parse(JSON.stringify({ name: 'x'.repeat(80) + i, s: 'y'.repeat(200) })));
    if (i % 20_000 === 0) peak = Math.max(peak, oldSpace());
  }
  console.log(peak);`;
const peakHeapMiB = (keep: boolean) =>
  Number(
    execFileSync(process.execPath, ['--input-type=module', '-e', oldSpaceChurn(keep)], { encoding: 'utf8' }),
  ) /
  2 ** 20;

describe('keepYoungHeapSmall: the operator heap does not grow far past what is live', () => {
  it('the old space (not the new one) under churn of the same live set stays smaller with it', () => {
    const kept = peakHeapMiB(true);
    const grown = peakHeapMiB(false);
    expect(kept).toBeLessThan(grown * 0.75);
  });

  it('under the same churn, the new space stays at its initial size with it and grows without it', () => {
    const small = newSpaceMiB(true);
    const grown = newSpaceMiB(false);
    expect(small).toBeLessThanOrEqual(4);
    expect(grown).toBeGreaterThanOrEqual(16); // else this test no longer shows anything
  });
});
