// RFB pixel formats and the Raw encoding of a 1-bpp Oberon framebuffer region.
import type { Palette } from '../png.ts';
import type { FrameSnapshot } from '../screen-input.ts';

export interface PixelFormat {
  bitsPerPixel: 8 | 16 | 32;
  depth: number;
  bigEndian: boolean;
  trueColour: boolean;
  redMax: number;
  greenMax: number;
  blueMax: number;
  redShift: number;
  greenShift: number;
  blueShift: number;
}

/** What the server offers: 32-bit little-endian true colour, 8 bits a channel. */
export const DEFAULT_FORMAT: PixelFormat = {
  bitsPerPixel: 32,
  depth: 24,
  bigEndian: false,
  trueColour: true,
  redMax: 255,
  greenMax: 255,
  blueMax: 255,
  redShift: 16,
  greenShift: 8,
  blueShift: 0,
};

export function encodePixelFormat(f: PixelFormat): Buffer {
  const b = Buffer.alloc(16);
  b[0] = f.bitsPerPixel;
  b[1] = f.depth;
  b[2] = f.bigEndian ? 1 : 0;
  b[3] = f.trueColour ? 1 : 0;
  b.writeUInt16BE(f.redMax, 4);
  b.writeUInt16BE(f.greenMax, 6);
  b.writeUInt16BE(f.blueMax, 8);
  b[10] = f.redShift;
  b[11] = f.greenShift;
  b[12] = f.blueShift;
  return b;
}

/** Decodes a client's pixel format; throws with the reason when we cannot serve it. */
export function decodePixelFormat(b: Buffer): PixelFormat {
  const bpp = b[0];
  if (bpp !== 8 && bpp !== 16 && bpp !== 32)
    throw new Error(`unsupported bits per pixel ${bpp} (8, 16 or 32)`);
  return {
    bitsPerPixel: bpp,
    depth: b[1],
    bigEndian: b[2] !== 0,
    trueColour: b[3] !== 0,
    redMax: b.readUInt16BE(4),
    greenMax: b.readUInt16BE(6),
    blueMax: b.readUInt16BE(8),
    redShift: b[10],
    greenShift: b[11],
    blueShift: b[12],
  };
}

/** The pixel value for an RGB colour; with a colour map, index 0 is the background, 1 the foreground. */
function pixelValue(f: PixelFormat, rgb: number, mapIndex: number): number {
  if (!f.trueColour) return mapIndex;
  const scale = (v: number, max: number) => Math.round((v * max) / 255);
  return (
    ((scale((rgb >>> 16) & 255, f.redMax) << f.redShift) |
      (scale((rgb >>> 8) & 255, f.greenMax) << f.greenShift) |
      (scale(rgb & 255, f.blueMax) << f.blueShift)) >>>
    0
  );
}

/** Encodes the two pixel values (background, foreground) as bytes in the client's format. */
export function pixelBytes(f: PixelFormat, palette: Palette): [Buffer, Buffer] {
  const bytes = f.bitsPerPixel / 8;
  const enc = (v: number) => {
    const b = Buffer.alloc(bytes);
    if (bytes === 1) b[0] = v & 255;
    else if (bytes === 2) f.bigEndian ? b.writeUInt16BE(v & 0xffff) : b.writeUInt16LE(v & 0xffff);
    else f.bigEndian ? b.writeUInt32BE(v >>> 0) : b.writeUInt32LE(v >>> 0);
    return b;
  };
  return [enc(pixelValue(f, palette.background, 0)), enc(pixelValue(f, palette.foreground, 1))];
}

export interface Rect {
  x: number;
  y: number; // from the top, as RFB counts
  w: number;
  h: number;
}

const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Raw-encoded pixels of a rectangle (RFB y from the top; Oberon line 0 at the bottom). */
export function rawRect(snap: FrameSnapshot, r: Rect, pixels: [Buffer, Buffer]): Buffer {
  const bpp = pixels[0].length;
  const span = snap.width >>> 5;
  const n = r.w * r.h;
  // Typed arrays of the pixel size write one pixel per store; their bytes are the client's bytes
  // when the host is little-endian (values read LE from the encoded pixels round-trip exactly).
  let out: Uint8Array | Uint16Array | Uint32Array;
  let v0: number;
  let v1: number;
  if (bpp === 1) {
    out = new Uint8Array(n);
    v0 = pixels[0][0];
    v1 = pixels[1][0];
  } else if (bpp === 2 && littleEndianHost) {
    out = new Uint16Array(n);
    v0 = pixels[0].readUInt16LE(0);
    v1 = pixels[1].readUInt16LE(0);
  } else if (bpp === 4 && littleEndianHost) {
    out = new Uint32Array(n);
    v0 = pixels[0].readUInt32LE(0);
    v1 = pixels[1].readUInt32LE(0);
  } else {
    return rawRectBytes(snap, r, pixels);
  }
  let o = 0;
  for (let row = r.y; row < r.y + r.h; row++) {
    const base = (snap.height - 1 - row) * span;
    let x = r.x;
    const end = r.x + r.w;
    while (x < end) {
      const word = snap.words[base + (x >>> 5)];
      const stop = Math.min(end, (x | 31) + 1);
      if (word === 0) {
        out.fill(v0, o, o + (stop - x));
        o += stop - x;
        x = stop;
        continue;
      }
      for (; x < stop; x++) out[o++] = (word >>> (x & 31)) & 1 ? v1 : v0;
    }
  }
  return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
}

/** The general path (any pixel size and host): copy the encoded pixel bytes one by one. */
function rawRectBytes(snap: FrameSnapshot, r: Rect, pixels: [Buffer, Buffer]): Buffer {
  const bpp = pixels[0].length;
  const out = Buffer.alloc(r.w * r.h * bpp);
  const span = snap.width >>> 5;
  let o = 0;
  for (let row = r.y; row < r.y + r.h; row++) {
    const base = (snap.height - 1 - row) * span;
    for (let x = r.x; x < r.x + r.w; x++) {
      const bit = (snap.words[base + (x >>> 5)] >>> (x & 31)) & 1;
      pixels[bit].copy(out, o);
      o += bpp;
    }
  }
  return out;
}

/**
 * Rectangles (RFB coordinates) covering every word that differs between two frames: one band
 * per run of changed rows, spanning the changed columns of that band, clipped to `within`.
 */
export function dirtyRects(prev: Uint32Array, snap: FrameSnapshot, within: Rect): Rect[] {
  const span = snap.width >>> 5;
  const out: Rect[] = [];
  let band: { top: number; bottom: number; left: number; right: number } | undefined;
  const flush = () => {
    if (!band) return;
    const x0 = Math.max(band.left * 32, within.x);
    const x1 = Math.min(band.right * 32 + 32, within.x + within.w);
    const y0 = Math.max(band.top, within.y);
    const y1 = Math.min(band.bottom + 1, within.y + within.h);
    if (x1 > x0 && y1 > y0) out.push({ x: x0, y: y0, w: x1 - x0, h: y1 - y0 });
    band = undefined;
  };
  for (let row = 0; row < snap.height; row++) {
    const base = (snap.height - 1 - row) * span;
    let left = -1;
    let right = -1;
    for (let w = 0; w < span; w++) {
      if (prev[base + w] !== snap.words[base + w]) {
        if (left < 0) left = w;
        right = w;
      }
    }
    if (left < 0) {
      flush();
      continue;
    }
    if (band) {
      band.bottom = row;
      band.left = Math.min(band.left, left);
      band.right = Math.max(band.right, right);
    } else {
      band = { top: row, bottom: row, left, right };
    }
  }
  flush();
  return out;
}
