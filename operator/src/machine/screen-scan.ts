// Small pure helpers that find things on an Oberon screen snapshot (no OCR): viewer title bars
// (rows that are almost all foreground) and where text ink lies, so a driver can click on the
// line it just typed. Coordinates here are picture coordinates: y from the TOP.

import type { FrameSnapshot } from './screen-input.ts';

export function inkAt(s: FrameSnapshot, x: number, yTop: number): number {
  const line = s.height - 1 - yTop;
  const w = s.words[line * (s.width >>> 5) + (x >>> 5)];
  return (w >>> (x & 31)) & 1;
}

/**
 * Count of foreground pixels in row yTop between x0 (inclusive) and x1 (exclusive). Word by
 * word, not pixel by pixel: runCommand scans the rows of the system track twice per command
 * (titleBars, lowestInkRow), per pixel ~270,000 calls of inkAt each time, which a fresh process
 * runs before V8 has optimised them (about 1.5 ms of CPU per command there). Pixels outside the
 * snapshot count as inkAt counts them (0).
 */
export function rowInk(s: FrameSnapshot, yTop: number, x0: number, x1: number): number {
  const from = Math.max(x0, 0); // inkAt reads no word for x < 0 (x >>> 5 is out of range)
  if (x1 <= from) return 0;
  const base = (s.height - 1 - yTop) * (s.width >>> 5);
  const w0 = from >>> 5;
  const w1 = (x1 - 1) >>> 5;
  let n = 0;
  for (let w = w0; w <= w1; w++) {
    let bits = s.words[base + w] ?? 0;
    if (w === w0) bits &= -1 << (from & 31);
    if (w === w1) bits &= -1 >>> (31 - ((x1 - 1) & 31));
    n += popcount(bits);
  }
  return n;
}

function popcount(v: number): number {
  const a = v - ((v >>> 1) & 0x55555555);
  const b = (a & 0x33333333) + ((a >>> 2) & 0x33333333);
  return Math.imul((b + (b >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/** A viewer's title bar is a band of mostly lit rows (inverted menu text) at least this tall. */
const BAR_MIN_ROWS = 8;

/** Tops of viewer title bars in a track: bands of ≥ 8 rows that are each ≥ 50 % lit. */
export function titleBars(s: FrameSnapshot, x0: number, x1: number): number[] {
  const out: number[] = [];
  let start = -1;
  for (let y = 0; y <= s.height; y++) {
    const lit = y < s.height && rowInk(s, y, x0, x1) >= 0.5 * (x1 - x0);
    if (lit && start < 0) start = y;
    if (!lit && start >= 0) {
      if (y - start >= BAR_MIN_ROWS) out.push(start);
      start = -1;
    }
  }
  return out;
}

/** The lowest row (from the top) with some ink in [x0,x1) × [y0,y1), or −1. Frame lines (rows ≥ 90 % lit) do not count. */
export function lowestInkRow(s: FrameSnapshot, x0: number, x1: number, y0: number, y1: number): number {
  for (let y = Math.min(y1, s.height) - 1; y >= y0; y--) {
    const n = rowInk(s, y, x0, x1);
    if (n > 0 && n < 0.9 * (x1 - x0)) return y;
  }
  return -1;
}

/** The leftmost x with ink in [x0,x1) × [y0,y1), or −1. */
export function leftmostInk(s: FrameSnapshot, x0: number, x1: number, y0: number, y1: number): number {
  for (let x = x0; x < x1; x++) for (let y = y0; y < y1; y++) if (inkAt(s, x, y) !== 0) return x;
  return -1;
}

/** The rightmost x with ink in [x0,x1) × [y0,y1), or −1. */
export function rightmostInk(s: FrameSnapshot, x0: number, x1: number, y0: number, y1: number): number {
  for (let x = x1 - 1; x >= x0; x--) for (let y = y0; y < y1; y++) if (inkAt(s, x, y) !== 0) return x;
  return -1;
}

/** True if any pixel differs between two snapshots inside the rectangle (picture coordinates). */
export function regionChanged(
  a: FrameSnapshot,
  b: FrameSnapshot,
  x0: number,
  y0: number,
  x1: number,
  y1: number,
): boolean {
  for (let y = y0; y < y1; y++)
    for (let x = x0; x < x1; x++) if (inkAt(a, x, y) !== inkAt(b, x, y)) return true;
  return false;
}
