import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TIGHT_LOOP } from '../../../bench/machine/tight-loop.ts';
import { assemble } from './asm.ts';
import type { Risc5 } from './cpu.ts';
import { randomProgram as randomWords, rng } from './interpreter-warmup.ts';
import { bareCpu, enterLongLived, leaveLongLived } from './jit.testkit.ts';
import {
  CodeSpace,
  type CompileTier,
  forgetTranslations,
  LIMITS,
  memoryLayout,
  setCompileTier,
  type Translation,
  translateBlock,
  translateShared,
} from './jit.ts';
import { compileForTier } from './wasm-tiering.ts';

// Random straight-line-and-forward-branch programs must leave the same registers, flags, H and
// memory on the block translator as on the interpreter.

/** R13 := 1000H (the scratch area for loads and stores), then a random program. */
function randomProgram(next: () => number, length: number): Int32Array {
  const body = randomWords(next, { length, storeSlots: 64, calls: false });
  return Int32Array.of(0x4d000000 | 0x1000, ...body);
}

function runOn(prog: Int32Array, jit: boolean, seed: number): Risc5 {
  // Translate after 1,000 runs (the default waits longer) so the test stays short.
  const cpu = bareCpu({ jit, hotBlock: 1000 });
  cpu.mem.set(prog);
  const next = rng(seed ^ 0x5a5a);
  for (let r = 0; r < 13; r++) cpu.R[r] = next() | 0;
  cpu.pc = 0;
  // Run it many times so the translator gets hot (blocks translate after repeated runs).
  for (let k = 0; k < 1100; k++) {
    cpu.pc = 0;
    cpu.run(prog.length + 10);
  }
  return cpu;
}

/** What translated code calls out to, for blocks that are only translated and compiled here. */
const NO_DEVICES = { ioRead: () => 0, ioWrite: () => {}, invalidate: () => {}, complexOp: () => 0 };

/** The ways a thread compiles its translations (jit.ts generation and CompileTier). */
const TIERS = [
  {
    name: 'a thread without a tier hook, as in the browser (a function per block)',
    grouped: false,
    setUp: () => {},
  },
  {
    name: 'a fresh Node thread (blocks in groups kept in the baseline tier, wasm-tiering.ts)',
    grouped: true,
    setUp: () => setCompileTier(compileForTier),
  },
  {
    name: 'a long-lived thread (blocks in groups, jit-group.ts)',
    grouped: true,
    setUp: () => enterLongLived(),
  },
];

for (const tier of TIERS)
  describe(tier.name, () => {
    beforeAll(() => {
      forgetTranslations();
      tier.setUp();
    });
    afterAll(leaveLongLived);
    describe('block translator', () => {
      it('agrees with the interpreter on 150 random programs (registers, N Z C V, H, memory)', () => {
        for (let seed = 1; seed <= 150; seed++) {
          const prog = randomProgram(rng(seed), 40);
          const i = runOn(prog, false, seed);
          const j = runOn(prog, true, seed);
          expect(j.translations, 'the translator ran').toBeGreaterThan(0);
          expect(Array.from(j.R), `registers, seed ${seed}`).toEqual(Array.from(i.R));
          expect([j.nz < 0, j.nz === 0, j.C, j.V, j.H], `flags, seed ${seed}`).toEqual([
            i.nz < 0,
            i.nz === 0,
            i.C,
            i.V,
            i.H,
          ]);
          expect(Array.from(j.mem.subarray(0x400, 0x440)), `memory, seed ${seed}`).toEqual(
            Array.from(i.mem.subarray(0x400, 0x440)),
          );
        }
      });
    });

    describe('a block that branches to its own start', () => {
      // The translator loops inside such a block instead of calling it again (jit-translate.ts): a
      // loop left by a side exit, and one left only when run()'s budget ends, in chunks of several
      // sizes so that the budget ends at every point of the loop.
      const programs = {
        sideExit: `
        MOV R0, 0
        MOV R1, 0
        MOV R2, 0
        MOV R3, 1000H
      loop:
        ADD R0, R0, 1
        ADD R1, R1, R0
        ADC R2, R2, R1
        STW R1, R3, 0
        SUB R4, R0, 700
        BLT loop
        MOV R5, 7
      halt:
        B halt`,
        endless: TIGHT_LOOP,
        // Each block branches to its own start and also leaves for the other, translated, block.
        nested: `
        MOV R0, 0
        MOV R3, 1000H
      outer:
        MOV R1, 0
      inner:
        ADD R1, R1, 1
        ADD R2, R2, R1
        STW R2, R3, 0
        SUB R4, R1, 5
        BLT inner
        ADD R0, R0, 1
        B outer`,
        // The loop stores a new instruction over one of its own words (as Oberon's loader stores
        // code): it must not go round again in its old translation.
        selfModifying: `
        MOV R0, 0
        MOV R1, 0
        MOV' R5, 4118H
        IOR R5, R5, 100H
        MOV R3, patched
      loop:
        ADD R0, R0, 1
      patched:
        ADD R1, R1, 1
        STW R5, R3, 0
        SUB R4, R0, 700
        BLT loop
      halt:
        B halt`,
      };
      for (const [name, src] of Object.entries(programs))
        it(`${name}: the same registers, flags and memory as the interpreter, whatever the budget`, () => {
          const prog = assemble(src).words;
          const cpuOf = (jit: boolean) => {
            const cpu = bareCpu({ jit, hotBlock: 4 });
            cpu.mem.set(prog);
            cpu.pc = 0;
            return cpu;
          };
          for (const chunk of [1, 3, 7, 64, 1000, 100_000]) {
            // Translated code may run past a budget by part of a block (jit-layout.ts maxBlock): the
            // interpreter then runs exactly as many instructions.
            const j = cpuOf(true);
            while (j.instructions < 20_000) j.run(Math.min(chunk, 20_000 - j.instructions));
            const i = cpuOf(false);
            i.run(j.instructions);
            expect(j.translations, 'the translator ran').toBeGreaterThan(0);
            const state = (c: Risc5) => [
              c.pc,
              c.instructions,
              ...c.R,
              c.nz,
              c.C,
              c.V,
              c.mem[0x400],
              c.mem[0x40],
            ];
            expect(state(j), `chunks of ${chunk}`).toEqual(state(i));
            if (name === 'selfModifying')
              expect(i.R[1], 'the stored ADD R1, R1, 100H ran').toBe(1 + 699 * 0x100);
          }
        });
    });

    describe('translated code is always valid WebAssembly', () => {
      it('compiles 3,000 blocks of random words (every opcode, register, condition and offset)', () => {
        const memBytes = 0x10000;
        const space = new CodeSpace(memBytes, NO_DEVICES);
        const mem = new Int32Array(space.buffer, 0, memBytes >>> 2);
        const next = rng(7);
        let words = 0;
        for (let batch = 0; batch < 200; batch++) {
          const blocks: Translation[] = [];
          for (let b = 0; b < 15; b++) {
            const at = (next() % 0x3000) & ~63;
            for (let i = 0; i < 64; i++) mem[at + i] = next() | 0;
            const t = translateBlock(mem, at, space.layout, 0xf000);
            words += t.length;
            blocks.push(t);
          }
          // WebAssembly.Module validates: a malformed body throws here.
          expect(() => space.install(blocks)).not.toThrow();
        }
        expect(words).toBeGreaterThan(3000);
      });
    });

    describe('stores into translated code', () => {
      // X runs words 250..259 (across the 256-word invalidation page boundary), Y runs 256..259: the
      // two share words of page 1. A store into page 0 drops X; a later store into a shared word of
      // page 1 must still drop Y.
      const ADD_R1_1 = 0x41180001; // ADD R1, R1, 1
      const ADD_R1_100H = 0x41180100; // ADD R1, R1, 100H
      const HALT = 0xe7ffffff | 0; // B halt
      const STORE = 0xa2300000 | 0; // STW R2, R3, 0
      function run(jit: boolean): number[] {
        const cpu = bareCpu({ jit, hotBlock: 2 });
        for (let w = 250; w < 259; w++) cpu.mem[w] = ADD_R1_1;
        cpu.mem[259] = HALT;
        cpu.mem[0x100] = STORE;
        cpu.mem[0x101] = HALT;
        const seen: number[] = [];
        const from = (pc: number, n: number) => {
          cpu.pc = pc;
          cpu.run(n);
          seen.push(cpu.R[1]);
        };
        const store = (word: number, value: number) => {
          cpu.R[2] = value;
          cpu.R[3] = word * 4;
          from(0x100, 2);
        };
        for (let k = 0; k < 3; k++) from(250, 10); // X hot and translated
        for (let k = 0; k < 3; k++) from(256, 4); // Y too
        store(250, ADD_R1_1); // page 0: X goes
        store(257, ADD_R1_100H); // page 1, a word Y covers
        from(256, 4);
        from(250, 10);
        return seen;
      }
      it('a store drops every translation covering the word, after neighbouring pages were dropped', () => {
        const i = run(false);
        expect(i.at(-2)).not.toBe((i.at(-3) as number) + 3); // the new word ran (not the old three ADD 1)
        expect(run(true)).toEqual(i);
      });
    });

    describe('a group of blocks (jit-group.ts)', () => {
      // A at word 10 jumps to B at word 300 (another invalidation page); both get hot in the same
      // run, so a long-lived thread compiles them in one group, where A runs B with a branch. A
      // store then changes B's first word: B is dropped, A is not, and A must not run B's old code.
      const A = 10;
      const B = 300;
      const STORE = 0xa4500000 | 0; // STW R4, R5, 0
      const prog = (mem: Int32Array) => {
        mem[A] = 0x41180001; // ADD R1, R1, 1
        mem[A + 1] = 0xe7000000 | (B - (A + 2)); // B to B
        mem[B] = 0x42280001; // ADD R2, R2, 1
        mem[B + 1] = 0xe7000000 | ((600 - (B + 2)) & 0xffffff); // B to the halt at 600
        mem[600] = 0xe7ffffff | 0; // halt
        mem[700] = STORE;
        mem[701] = 0xe7ffffff | 0;
      };
      function run(jit: boolean): { seen: number[]; cpu: Risc5 } {
        const cpu = bareCpu({ jit, hotBlock: 2 });
        prog(cpu.mem);
        const seen: number[] = [];
        const from = (pc: number, n: number) => {
          cpu.pc = pc;
          cpu.run(n);
          seen.push(cpu.R[1], cpu.R[2]);
        };
        for (let k = 0; k < 4; k++) from(A, 4);
        cpu.R[4] = 0x42280100; // ADD R2, R2, 100H
        cpu.R[5] = B * 4;
        from(700, 2);
        for (let k = 0; k < 3; k++) from(A, 4);
        return { seen, cpu };
      }
      it('runs a block of its group only while it is installed', () => {
        const i = run(false).seen;
        const { seen, cpu } = run(true);
        expect(seen).toEqual(i);
        expect(i.at(-1), 'the new ADD R2, R2, 100H ran').toBe((i.at(-3) as number) + 0x100);
        const layout = memoryLayout(0x10000);
        const a = translateShared(cpu.mem, A, layout, 0xf000).compiled;
        expect(a, 'A is translated').toBeDefined();
        if (tier.grouped) {
          // B's old words: the translation A's group holds
          const old = new Int32Array(0x4000);
          prog(old);
          const b = translateShared(old, B, layout, 0xf000).compiled;
          expect(b?.module, 'A and B compiled in one module').toBe(a?.module);
          expect(b?.group, '...in one group').toBe(a?.group);
          expect(a?.global).toBeGreaterThanOrEqual(0);
        } else expect(a?.global, 'a thread without a tier hook compiles lone blocks').toBe(-1);
      });
    });
  });

describe("the thread's translation cache", () => {
  it('hands back the translation of the words RAM holds at the address now, not of the last ones', () => {
    forgetTranslations();
    const space = new CodeSpace(0x10000, NO_DEVICES);
    const mem = new Int32Array(space.buffer, 0, 0x4000);
    const HALT = 0xe7ffffff | 0; // B halt
    mem.set(Int32Array.of(0x41180001, 0x41180002, HALT), 0x100); // ADD R1, R1, 1; ADD R1, R1, 2
    const first = translateShared(mem, 0x100, space.layout, 0xf000);
    expect(translateShared(mem, 0x100, space.layout, 0xf000)).toBe(first);
    mem[0x101] = HALT; // now a block of two words
    const second = translateShared(mem, 0x100, space.layout, 0xf000);
    expect(second).not.toBe(first);
    expect(second.length).toBe(2);
    expect(translateShared(mem, 0x100, space.layout, 0xf001).length, 'another display: another entry').toBe(
      2,
    );
    mem[0x101] = 0x41180002;
    expect(
      translateShared(mem, 0x100, space.layout, 0xf000),
      'the first words again: the first translation',
    ).toBe(first);
    forgetTranslations();
  });
});

describe('a long-lived thread', () => {
  // Past LIMITS.longLived instructions in translated code, the thread compiles its translations
  // again in modules of the long-lived tier (jit.ts setCompileTier): the same bodies, so the same
  // results as before and as the interpreter.
  const state = (cpu: Risc5) => [
    Array.from(cpu.R),
    cpu.nz < 0,
    cpu.nz === 0,
    cpu.C,
    cpu.V,
    cpu.H,
    Array.from(cpu.mem.subarray(0x400, 0x440)),
  ];
  it('compiles its blocks again for the long-lived tier, and they run as before', () => {
    forgetTranslations();
    const tiers: boolean[] = [];
    const hook: CompileTier = (compile, longLived) => {
      tiers.push(longLived);
      return compile();
    };
    setCompileTier(hook);
    try {
      const prog = randomProgram(rng(42), 40);
      const before = runOn(prog, true, 42);
      expect(before.translations).toBeGreaterThan(0);
      expect(tiers.length).toBeGreaterThan(0);
      expect(tiers).not.toContain(true);
      const cpuNow = () => bareCpu();
      expect(cpuNow().hotBlock).toBe(LIMITS.hotBlock);
      enterLongLived(hook);
      expect(tiers).not.toContain(true); // the loop's block was compiled before the thread was long-lived
      expect(cpuNow().hotBlock, 'a CPU made now translates sooner').toBe(LIMITS.longLivedHotBlock);
      // The CPU that ran before catches up at its next run(): the blocks it holds are compiled
      // again for the long-lived tier, in one module (cpu-blocks.ts recompile).
      const again = (cpu: Risc5) => {
        cpu.pc = 0;
        cpu.run(prog.length + 10);
        return cpu;
      };
      again(before);
      expect(tiers.at(-1), 'the held blocks compiled again').toBe(true);
      const held = translateShared(before.mem, 0, memoryLayout(0x10000), 0xf000).compiled;
      expect(held?.generation, 'in a module of the long-lived tier').toBe(1);
      const after = runOn(prog, true, 42);
      const interpreted = runOn(prog, false, 42);
      expect(state(after)).toEqual(state(interpreted));
      expect(state(before)).toEqual(state(again(interpreted)));
    } finally {
      leaveLongLived();
    }
  });
});
