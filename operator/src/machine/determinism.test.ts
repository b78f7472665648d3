// The deterministic clock is a function of the instruction count alone: the timer a program reads
// is computed at the reading instruction, so neither the translator nor the size of run() chunks
// can change what Oberon sees. Proof: boot + a compile + 5 s of idle leave the same RAM, registers
// and disk under five ways of running, and under two more each in a fresh Node thread's groups and
// in a long-lived thread.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { enterLongLived, leaveLongLived } from './jit.testkit.ts';
import { forgetTranslations, setCompileTier } from './jit.ts';
import { Machine } from './machine.ts';
import { copyBaseImage, removeCopies } from './test-disk.ts';
import { compileForTier } from './wasm-tiering.ts';

afterAll(removeCopies);

const LIMITS = {
  bootInstructions: 60e6, // a boot takes about 10 M
  compileInstructions: 400e6, // ORP.Compile Sierpinski.Mod takes about 20 M
  idleMs: 5000,
} as const;

interface Outcome {
  ram: string;
  disk: string;
  cycles: number;
  timerMs: number;
  timerReads: number[];
}

/** Run in chunks of `chunk` until `done` holds after an idle stop (idle stops are deterministic). */
function runTo(m: Machine, chunk: number, max: number, done: () => boolean): void {
  const start = m.cpu.instructions;
  for (;;) {
    const r = m.run(chunk);
    if (r.idle && done()) return;
    if (m.cpu.instructions - start > max) throw new Error(`not done within ${max} instructions`);
  }
}

function scenario(disk: Buffer, jit: boolean, chunk: number): Outcome {
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit });
  // Sample the timer as Oberon reads it: every read returns the value for its own instruction.
  const timerReads: number[] = [];
  const read = m.ioRead.bind(m);
  m.ioRead = (addr: number) => {
    const v = read(addr);
    if (addr === 0xffffffc0 && timerReads.length < 5000) timerReads.push(v);
    return v;
  };
  runTo(m, chunk, LIMITS.bootInstructions, () => m.booted);
  m.runCommand('ORP.Compile Sierpinski.Mod');
  runTo(m, chunk, LIMITS.compileInstructions, () => !m.inputPending);
  const end = m.timerMs() + LIMITS.idleMs;
  runTo(m, chunk, LIMITS.compileInstructions, () => m.timerMs() >= end);
  const state = createHash('sha256');
  state.update(new Uint8Array(m.cpu.mem.buffer, m.cpu.mem.byteOffset, m.memBytes));
  state.update(new Uint8Array(m.cpu.R.buffer, m.cpu.R.byteOffset, 64));
  state.update(`${m.cpu.pc} ${m.cpu.nz} ${m.cpu.C} ${m.cpu.V} ${m.cpu.H}`);
  expect(m.serialText()).toBe('');
  return {
    ram: state.digest('hex'),
    disk: createHash('sha256').update(m.disk.bytes).digest('hex'),
    cycles: m.cycles,
    timerMs: m.timerMs(),
    timerReads,
  };
}

describe('--deterministic is deterministic', () => {
  it('boot + ORP.Compile + 5 s idle: the same RAM, registers, disk and timer readings with the translator on and off and for three chunk sizes', () => {
    const disk = fs.readFileSync(copyBaseImage());
    const reference = scenario(disk, false, 100_000);
    expect(reference.timerReads.length).toBeGreaterThan(500);
    for (const [jit, chunk] of [
      [true, 100_000],
      [false, 7_919],
      [true, 7_919],
      [true, 1_000_003],
    ] as const) {
      const other = scenario(disk, jit, chunk);
      const label = `translator ${jit ? 'on' : 'off'}, chunks of ${chunk}`;
      expect(other.timerReads, label).toEqual(reference.timerReads);
      expect({ ...other, timerReads: 0 }, label).toEqual({ ...reference, timerReads: 0 });
    }
    // A Node thread compiles its translations in groups (jit-group.ts), fresh (kept in V8's
    // baseline code, wasm-tiering.ts) and long-lived: the same again.
    for (const [thread, setUp] of [
      ['a fresh Node thread', () => setCompileTier(compileForTier)],
      ['a long-lived thread', () => enterLongLived()],
    ] as const) {
      forgetTranslations();
      setUp();
      try {
        for (const chunk of [100_000, 7_919]) {
          const other = scenario(disk, true, chunk);
          const label = `translator on in ${thread}, chunks of ${chunk}`;
          expect(other.timerReads, label).toEqual(reference.timerReads);
          expect({ ...other, timerReads: 0 }, label).toEqual({ ...reference, timerReads: 0 });
        }
      } finally {
        leaveLongLived();
      }
    }
  }, 300_000);
});
