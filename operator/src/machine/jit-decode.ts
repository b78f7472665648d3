// What the translator needs to know of RISC5 instruction words before it emits code (jit-translate.ts):
// where a block ends, which registers an instruction reads and writes, and where the C and V flags
// are live. Pure functions of the words; the emitter stays with the code it emits.

import { LIMITS } from './jit-layout.ts';

export function isBranch(ir: number): boolean {
  return ir < 0 && (ir & 0x40000000) !== 0;
}

export function readsCV(ir: number): boolean {
  if (ir >= 0) {
    const op = (ir >>> 16) & 15;
    const u = (ir & 0x20000000) !== 0;
    const q = (ir & 0x40000000) !== 0;
    if (op === 0 && u && !q && (ir & 0x10000000) !== 0) return true; // MOV flags
    return (op === 8 || op === 9) && u; // ADC, SBC
  }
  if ((ir & 0x40000000) === 0) return false;
  const c = (ir >>> 24) & 7;
  return c >= 2 && c <= 6;
}

export function writesCV(ir: number): boolean {
  if (ir < 0) return false;
  const op = (ir >>> 16) & 15;
  return op === 8 || op === 9;
}

/** Registers an instruction reads (bit mask) and the one it writes (-1: none). */
export function regUse(ir: number): { reads: number; writes: number } {
  if (ir >= 0) {
    const c = (ir & 0x40000000) === 0 ? 1 << (ir & 15) : 0;
    return { reads: (1 << ((ir >>> 20) & 15)) | c, writes: (ir >>> 24) & 15 };
  }
  if ((ir & 0x40000000) === 0) {
    const base = 1 << ((ir >>> 20) & 15);
    if ((ir & 0x20000000) === 0) return { reads: base, writes: (ir >>> 24) & 15 };
    return { reads: base | (1 << ((ir >>> 24) & 15)), writes: -1 };
  }
  const target = (ir & 0x20000000) === 0 ? 1 << (ir & 15) : 0;
  return { reads: target, writes: (ir & 0x10000000) !== 0 ? 15 : -1 };
}

/** The instruction words of the block at pc0: up to an unconditional branch, at most LIMITS.maxBlock. */
export function blockWords(mem: Int32Array, pc0: number, memWords: number): number[] {
  const irs: number[] = [];
  for (let pc = pc0; pc < memWords && irs.length < LIMITS.maxBlock; pc++) {
    const ir = mem[pc];
    irs.push(ir);
    if (isBranch(ir) && ((ir >>> 24) & 15) === 7) break; // an unconditional branch ends the block
  }
  return irs;
}

/** Registers and flags a block touches, and which C/V results a later instruction or exit can observe. */
export interface Liveness {
  /** Per instruction: its C/V results are observed (an ADD/SUB whose C/V are overwritten unread skips them). */
  needCV: boolean[];
  /** Registers read or written anywhere in the block (bit mask): loaded into locals at entry. */
  used: number;
  /** Registers written (bit mask): stored back at the epilogue. */
  dirty: number;
  /** Some instruction writes C/V: the epilogue stores the flags. */
  cvWritten: boolean;
}

export function liveness(irs: readonly number[]): Liveness {
  const n = irs.length;
  // C/V are live at every exit; scanning backwards, a write of C/V kills them until a read.
  const needCV = new Array<boolean>(n).fill(true);
  let live = true;
  let used = 0;
  let dirty = 0;
  let cvWritten = false;
  for (let k = n - 1; k >= 0; k--) {
    const ir = irs[k];
    if (writesCV(ir)) {
      needCV[k] = live;
      live = false;
      cvWritten = true;
    }
    if (readsCV(ir) || isBranch(ir)) live = true;
    const u = regUse(ir);
    used |= u.reads;
    if (u.writes >= 0) {
      used |= 1 << u.writes;
      dirty |= 1 << u.writes;
    }
  }

  return { needCV, used, dirty, cvWritten };
}
