// The TypeScript emulator's side of the instruction trace: for each instruction, before it runs,
// its byte address and an FNV-1a hash of the architectural state (PC, R0..R15, H, NZCV), the
// same record qemu-system-risc5 writes with -machine oberon,trace=FILE (target/risc5/helper.c).

import { bootRom } from '../../operator/src/machine/boot-rom.ts';
import { Machine } from '../../operator/src/machine/machine.ts';

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 16777619;

function fnvWord(h: number, w: number): number {
  let x = h;
  for (let i = 0; i < 4; i++) {
    x ^= (w >>> (8 * i)) & 0xff;
    x = Math.imul(x, FNV_PRIME) >>> 0;
  }
  return x;
}

/** The state hash of a machine about to execute its next instruction. */
export function stateHash(m: Machine): number {
  const cpu = m.cpu;
  let h = fnvWord(FNV_OFFSET, (cpu.pc << 2) >>> 0);
  for (let i = 0; i < 16; i++) h = fnvWord(h, cpu.R[i]);
  h = fnvWord(h, cpu.H);
  const nzcv = (cpu.N ? 8 : 0) | (cpu.Z ? 4 : 0) | (cpu.C ? 2 : 0) | (cpu.V ? 1 : 0);
  return fnvWord(h, nzcv);
}

export interface TraceMismatch {
  index: number;
  pc: number;
  qemu: { pc: number; hash: number };
  ts: { pc: number; hash: number };
}

/** A fresh deterministic TS machine (no JIT) on a copy of the disk, running our boot ROM. */
export function traceMachine(
  disk: Buffer,
  rom: { memLim: number; stackOrg: number },
  commands?: string,
): Machine {
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit: false, commands });
  m.setRom(bootRom(rom.memLim, rom.stackOrg)); // the very ROM QEMU runs (qemu-harness writeProm)
  return m;
}

/**
 * Step a fresh deterministic TS machine (the given boot ROM on the CPU, no JIT) through `records`
 * instructions and compare each with QEMU's trace buffer. Returns the first mismatch or null.
 */
export function compareTrace(
  disk: Buffer,
  rom: { memLim: number; stackOrg: number },
  trace: Buffer,
  records: number,
): TraceMismatch | null {
  return stepAndCompare(traceMachine(disk, rom), trace, records);
}

/** Steps m through `records` instructions against QEMU's trace; the first mismatch or null. */
export function stepAndCompare(m: Machine, trace: Buffer, records: number): TraceMismatch | null {
  for (let i = 0; i < records; i++) {
    const pc = (m.cpu.pc << 2) >>> 0;
    const hash = stateHash(m);
    const qpc = trace.readUInt32LE(i * 8);
    const qhash = trace.readUInt32LE(i * 8 + 4);
    if (qpc !== pc || qhash !== hash)
      return { index: i, pc, qemu: { pc: qpc, hash: qhash }, ts: { pc, hash } };
    m.run(1);
  }
  return null;
}
