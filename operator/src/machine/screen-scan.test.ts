import { describe, expect, it } from 'vitest';
import type { FrameSnapshot } from './screen-input.ts';
import { inkAt, lowestInkRow, rowInk, titleBars } from './screen-scan.ts';

/** A snapshot with seeded pseudo-random words, some rows all lit (title bars), some empty. */
function snapshot(width: number, height: number, seed: number): FrameSnapshot {
  const perLine = width >>> 5;
  const words = new Uint32Array(perLine * height);
  let x = seed >>> 0;
  const next = () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x;
  };
  for (let line = 0; line < height; line++) {
    const kind = next() % 8; // 0: empty row, 1: lit row, else random ink
    for (let w = 0; w < perLine; w++)
      words[line * perLine + w] = kind === 0 ? 0 : kind === 1 ? 0xffffffff : next() & next();
  }
  return { width, height, words, version: 0 };
}

/** rowInk's definition: pixel by pixel through inkAt. */
function rowInkByPixel(s: FrameSnapshot, yTop: number, x0: number, x1: number): number {
  let n = 0;
  for (let x = x0; x < x1; x++) n += inkAt(s, x, yTop);
  return n;
}

describe('screen-scan', () => {
  it('rowInk counts word by word exactly what inkAt sees pixel by pixel', () => {
    const s = snapshot(1024, 96, 7);
    const xs = [-40, -1, 0, 1, 5, 31, 32, 33, 63, 64, 100, 500, 660, 991, 992, 1016, 1023, 1024, 1050];
    for (const yTop of [-2, -1, 0, 1, 17, 50, 94, 95, 96, 97])
      for (const x0 of xs)
        for (const x1 of xs)
          expect(rowInk(s, yTop, x0, x1), `row ${yTop}, x ${x0}..${x1}`).toBe(rowInkByPixel(s, yTop, x0, x1));
  });

  it('rowInk agrees with inkAt on every span of a narrow screen', () => {
    const s = snapshot(96, 8, 99);
    for (let yTop = 0; yTop < s.height; yTop++)
      for (let x0 = 0; x0 <= s.width; x0++)
        for (let x1 = x0; x1 <= s.width; x1++)
          expect(rowInk(s, yTop, x0, x1)).toBe(rowInkByPixel(s, yTop, x0, x1));
  });

  it('finds title bars and the lowest inked row of a drawn viewer', () => {
    const width = 1024;
    const height = 768;
    const perLine = width >>> 5;
    const words = new Uint32Array(perLine * height);
    const light = (yTop: number, x0: number, x1: number) => {
      const line = height - 1 - yTop;
      for (let x = x0; x < x1; x++) words[line * perLine + (x >>> 5)] |= 1 << (x & 31);
    };
    for (let y = 100; y < 112; y++) light(y, 640, 1024); // a title bar, 12 rows
    for (let y = 300; y < 303; y++) light(y, 640, 1024); // too thin for a bar
    light(400, 700, 710); // text ink
    light(420, 640, 1024); // a frame line: 90 % lit or more does not count as ink
    const s = { width, height, words, version: 0 };
    expect(titleBars(s, 660, 1016)).toEqual([100]);
    expect(lowestInkRow(s, 660, 1016, 115, height)).toBe(400);
    expect(lowestInkRow(s, 660, 1016, 401, height)).toBe(-1);
  });
});
