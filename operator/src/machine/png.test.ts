import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { BLACK_WHITE_PALETTE, OBERON_PALETTE, snapshotToPng, snapshotToRgba } from './png.ts';
import type { FrameSnapshot } from './screen-input.ts';

function frame(width: number, height: number, set: [number, number][]): FrameSnapshot {
  const words = new Uint32Array((width / 32) * height);
  for (const [x, y] of set) words[y * (width / 32) + (x >>> 5)] |= 1 << (x & 31);
  return { width, height, words, version: 1 };
}

function pixel(png: PNG, x: number, row: number): number {
  const o = (row * png.width + x) * 4;
  return (png.data[o] << 16) | (png.data[o + 1] << 8) | png.data[o + 2];
}

describe('framebuffer PNG', () => {
  it('puts Oberon line 0 at the bottom and bit 0 of a word at the left, in the emulator colours', () => {
    const snap = frame(64, 4, [
      [0, 0],
      [33, 3],
      [63, 1],
    ]);
    const file = snapshotToPng(snap);
    expect([file[24], file[25]]).toEqual([1, 3]); // IHDR: 1 bit per pixel, indexed colour
    const png = PNG.sync.read(file); // pngjs checks the CRCs and the zlib stream
    expect([png.width, png.height]).toEqual([64, 4]);
    expect(pixel(png, 0, 3)).toBe(OBERON_PALETTE.foreground); // (0,0) is bottom-left
    expect(pixel(png, 33, 0)).toBe(OBERON_PALETTE.foreground); // y = 3 is the top row
    expect(pixel(png, 63, 2)).toBe(OBERON_PALETTE.foreground);
    expect(pixel(png, 1, 3)).toBe(OBERON_PALETTE.background);
    expect(pixel(png, 0, 0)).toBe(OBERON_PALETTE.background);
    let lit = 0;
    for (let r = 0; r < 4; r++)
      for (let x = 0; x < 64; x++) if (pixel(png, x, r) === OBERON_PALETTE.foreground) lit++;
    expect(lit).toBe(3);
  });

  it('gives RGBA pixels top line first for viewers that draw themselves', () => {
    const rgba = snapshotToRgba(frame(32, 2, [[3, 1]]), BLACK_WHITE_PALETTE);
    expect([...rgba.subarray(12, 16)]).toEqual([255, 255, 255, 255]); // (3, 1) is in the top row
    expect([...rgba.subarray(32 * 4 + 12, 32 * 4 + 16)]).toEqual([0, 0, 0, 255]);
  });

  it('can draw plain black and white', () => {
    const png = PNG.sync.read(snapshotToPng(frame(32, 1, [[5, 0]]), BLACK_WHITE_PALETTE));
    expect(pixel(png, 5, 0)).toBe(0xffffff);
    expect(pixel(png, 4, 0)).toBe(0);
  });
});
