// A boot image: the exact state of a machine at an instruction boundary of its boot, taken before
// anything from outside (serial line, radio, clipboard, keyboard or mouse input, the wall clock)
// could have influenced it. Up to that point a boot is a function of the machine's configuration
// and the disk blocks it read, so another machine with the same configuration whose disk holds
// the same bytes in those blocks may start from the image instead of executing those
// instructions again: its RAM, registers and devices are then exactly what its own boot would
// have produced (boot-image.test.ts proves it against real boots). The timer runs on machine
// time (instructions / 25,000) until that point, also in real-time mode, so that it holds.
// Browser-safe (the web console runs machines too): no Node modules here.

import type { DiskImage, SdCardState } from './sd-card.ts';

export const LIMITS = {
  maxReads: 1 << 16, // block reads recorded before the boot is no longer worth an image
} as const;

export interface BootImage {
  /** The configuration it is valid for (Machine.bootKey()). */
  key: string;
  /** SD blocks read up to the image, in order; their contents (512 bytes each); a hash of both. */
  reads: number[];
  readData: Uint8Array;
  readsHash: string;
  instructions: number;
  skipped: number;
  cpu: { pc: number; nz: number; C: number; V: number; H: number; R: Int32Array; fbVersion: number };
  /** RAM (memBytes bytes, the framebuffer included). */
  ram: Uint8Array;
  devices: {
    leds: number;
    ledHistory: number[];
    spiSel: number;
    spiFast: boolean;
    lastPoll: number;
    quietPolls: number;
    activity: boolean;
    lastFb: number;
    booted: boolean;
    voidFetches: number;
    sd: SdCardState;
  };
}

/** The given blocks as this disk holds them, 512 bytes each, in order. */
export function blocksData(disk: DiskImage, blocks: readonly number[]): Uint8Array {
  const out = new Uint8Array(blocks.length * 512);
  const words = new Int32Array(out.buffer);
  blocks.forEach((b, i) => {
    disk.readBlock(b, words, i * 128);
  });
  return out;
}

/** True when this disk holds exactly the recorded bytes in every block the recorded boot read. */
export function sameBlocks(disk: DiskImage, image: BootImage): boolean {
  if (image.readData.length !== image.reads.length * 512) return false;
  return image.reads.every((b, i) => disk.blockEquals(b, image.readData.subarray(i * 512, (i + 1) * 512)));
}

/**
 * A 64-bit FNV-1a hash (two 32-bit lanes) as 16 hex digits: an identity for images and state
 * digests, not a check of trust (images are validated by comparing bytes, sameBlocks).
 */
export function fnv64(parts: readonly (Uint8Array | string)[]): string {
  let h1 = 0x811c9dc5;
  let h2 = 0xcbf29ce4;
  const byte = (b: number) => {
    h1 = Math.imul(h1 ^ b, 0x01000193);
    h2 = Math.imul(h2 ^ b ^ (h1 >>> 24), 0x01000193);
  };
  for (const p of parts) {
    if (typeof p === 'string') for (let i = 0; i < p.length; i++) byte(p.charCodeAt(i) & 0xff);
    else for (let i = 0; i < p.length; i++) byte(p[i]);
    byte(0xff);
  }
  return (h1 >>> 0).toString(16).padStart(8, '0') + (h2 >>> 0).toString(16).padStart(8, '0');
}
