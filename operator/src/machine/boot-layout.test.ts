// The boot loader's memory layout: Wirth's BootLoad and the reference ROM set the stack origin
// (SP at the jump to 0, and the word at address 24 that Kernel.Init starts the heap from) to
// 80000H on the board's 1 MiB layout; only the emulator's --mem/--size layouts use display/2.
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { Machine, type MachineOptions } from './machine.ts';
import { copyBaseImage, removeCopies } from './test-disk.ts';

afterAll(removeCopies);

/** Step until the boot code jumps to address 0; returns SP and the stored stackOrg/MemLim then. */
function atEntry(opts: Partial<MachineOptions>): {
  sp: number;
  stackOrg: number;
  memLim: number;
  m: Machine;
} {
  const m = new Machine({
    disk: fs.readFileSync(copyBaseImage()),
    clock: 'deterministic',
    jit: false,
    ...opts,
  });
  for (let i = 0; i < 5_000_000 && m.cpu.pc !== 0; i++) m.run(1);
  expect(m.cpu.pc, 'the boot code reached address 0').toBe(0);
  return { sp: m.cpu.R[14], stackOrg: m.cpu.mem[24 >>> 2], memLim: m.cpu.mem[12 >>> 2], m };
}

describe('boot layout', () => {
  for (const boot of ['native', 'assembled'] as const) {
    it(`${boot} boot, board layout: SP = stackOrg = 80000H, MemLim = E7EF0H`, () => {
      const { sp, stackOrg, memLim, m } = atEntry({ boot });
      expect([sp, stackOrg, memLim].map((v) => v.toString(16))).toEqual(['80000', '80000', 'e7ef0']);
      // And Oberon boots on it.
      expect(m.runUntil(() => m.booted, { maxInstructions: 30e6 })).toBe(true);
      expect(m.cpu.mem[24 >>> 2]).toBe(0x80000);
    });
  }

  it('a custom layout (--mem 2) keeps the emulator rule: stackOrg = display / 2', () => {
    const { sp, stackOrg } = atEntry({ memoryMiB: 2 });
    expect([sp, stackOrg].map((v) => v.toString(16))).toEqual(['100000', '100000']);
  });
});
