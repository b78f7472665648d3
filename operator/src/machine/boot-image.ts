// A boot image: the exact state of a machine at an instruction boundary of its boot, taken before
// anything from outside (serial line, radio, clipboard, keyboard or mouse input, the wall clock)
// could have influenced it. Up to that point a boot is a function of the machine's configuration
// and the disk blocks it read, so another machine with the same configuration whose disk holds
// the same bytes in those blocks may start from the image instead of executing those
// instructions again: its RAM, registers and devices are then exactly what its own boot would
// have produced (boot-image.test.ts proves it against real boots). The timer runs on machine
// time (instructions / 25,000) until that point, also in real-time mode, so that it holds.

import { createHash } from 'node:crypto';
import type { DiskImage, SdCardState } from './sd-card.ts';

export const LIMITS = {
  maxReads: 1 << 16, // block reads recorded before the boot is no longer worth an image
} as const;

export interface BootImage {
  /** The configuration it is valid for (Machine.bootKey()). */
  key: string;
  /** SD blocks read up to the image, in order, and the hash of their contents. */
  reads: number[];
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

/** Hash of the given blocks as this disk holds them (block numbers included). */
export function blocksHash(disk: DiskImage, blocks: readonly number[]): string {
  const h = createHash('sha256');
  const buf = new Int32Array(128);
  const bytes = new Uint8Array(buf.buffer);
  const no = new Int32Array(1);
  for (const b of blocks) {
    no[0] = b;
    h.update(new Uint8Array(no.buffer));
    disk.readBlock(b, buf, 0);
    h.update(bytes);
  }
  return h.digest('hex');
}
