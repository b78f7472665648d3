// A framebuffer snapshot as a PNG image, top line up, in the colours the reference emulator
// (pdewacht/oberon-risc-emu) gives Oberon's two pixel values; RGBA pixels for other viewers.
import { crc32, deflateSync } from 'node:zlib';
import { OBERON_PALETTE, type Palette } from './palette.ts';
import type { FrameSnapshot } from './screen-input.ts';

export { BLACK_WHITE_PALETTE, OBERON_PALETTE, type Palette } from './palette.ts';

/** RGBA pixels, top line first (Oberon's line 0 is the bottom one). */
export function snapshotToRgba(snap: FrameSnapshot, palette: Palette = OBERON_PALETTE): Buffer {
  const { width, height, words } = snap;
  const span = width >>> 5;
  const out = Buffer.alloc(width * height * 4);
  const fg = [(palette.foreground >>> 16) & 255, (palette.foreground >>> 8) & 255, palette.foreground & 255];
  const bg = [(palette.background >>> 16) & 255, (palette.background >>> 8) & 255, palette.background & 255];
  for (let row = 0; row < height; row++) {
    const line = height - 1 - row;
    let o = row * width * 4;
    for (let w = 0; w < span; w++) {
      const word = words[line * span + w];
      for (let bit = 0; bit < 32; bit++) {
        const c = (word >>> bit) & 1 ? fg : bg;
        out[o] = c[0];
        out[o + 1] = c[1];
        out[o + 2] = c[2];
        out[o + 3] = 255;
        o += 4;
      }
    }
  }
  return out;
}

// Bit-reversal of a byte: Oberon's leftmost pixel is bit 0, PNG's is the most significant bit.
const REVERSED = new Uint8Array(256).map((_, b) => {
  let r = 0;
  for (let i = 0; i < 8; i++) r |= ((b >>> i) & 1) << (7 - i);
  return r;
});

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))) >>> 0);
  return Buffer.concat([head, data, crc]);
}

/**
 * The screen as a 1-bit indexed PNG (palette: background, foreground): the framebuffer's own
 * depth, so it is small and quick to make (a few ms for 1024×768); any PNG reader shows it in colour.
 */
export function snapshotToPng(snap: FrameSnapshot, palette: Palette = OBERON_PALETTE): Buffer {
  const { width, height, words } = snap;
  const span = width >>> 5;
  const rowBytes = width >>> 3;
  const raw = Buffer.alloc((rowBytes + 1) * height); // each row: filter type 0, then the bits
  for (let row = 0; row < height; row++) {
    const line = height - 1 - row;
    let o = row * (rowBytes + 1) + 1;
    for (let w = 0; w < span; w++) {
      const word = words[line * span + w];
      raw[o++] = REVERSED[word & 255];
      raw[o++] = REVERSED[(word >>> 8) & 255];
      raw[o++] = REVERSED[(word >>> 16) & 255];
      raw[o++] = REVERSED[word >>> 24];
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 1; // bit depth
  ihdr[9] = 3; // indexed colour
  const plte = Buffer.alloc(6);
  plte.writeUIntBE(palette.background, 0, 3); // index 0: a clear bit
  plte.writeUIntBE(palette.foreground, 3, 3); // index 1: a set bit
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('PLTE', plte),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
