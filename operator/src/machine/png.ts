// A framebuffer snapshot as a PNG image, top line up, in the colours the reference emulator
// (pdewacht/oberon-risc-emu) gives Oberon's two pixel values.
import { PNG } from 'pngjs';
import type { FrameSnapshot } from './screen-input.ts';

export interface Palette {
  /** RGB of a set bit (Oberon's "white", the foreground). */
  readonly foreground: number;
  /** RGB of a clear bit (Oberon's "black", the background). */
  readonly background: number;
}

/** The reference emulator's colours: 1 → #FDF6E3, 0 → #657B83. */
export const OBERON_PALETTE: Palette = { foreground: 0xfdf6e3, background: 0x657b83 };
export const BLACK_WHITE_PALETTE: Palette = { foreground: 0xffffff, background: 0x000000 };

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

export function snapshotToPng(snap: FrameSnapshot, palette: Palette = OBERON_PALETTE): Buffer {
  const png = new PNG({ width: snap.width, height: snap.height, colorType: 2, inputColorType: 6 });
  png.data = snapshotToRgba(snap, palette);
  return PNG.sync.write(png, { colorType: 2 });
}
