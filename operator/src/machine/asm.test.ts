import { describe, expect, it } from 'vitest';
import { AsmError, assemble } from './asm.ts';

const word = (src: string) => assemble(src).words[0] >>> 0;

describe('RISC5 assembler (Wirth notation)', () => {
  it("encodes what Oberon's compiler and boot loader contain", () => {
    expect(word("MOV' R1, 0EH")).toBe(0x6100000e); // MemLim high half (the boot loader)
    expect(word('IOR R1, R1, 7EF0H')).toBe(0x41167ef0); // MemLim low half
    expect(word('B R15')).toBe(0xc700000f); // return (BR LNK)
    expect(word('MOV R0, 0')).toBe(0x40000000);
    expect(word('SUB SP, SP, 8')).toBe(0x4ee90008);
    expect(word('STW LNK, SP, 0')).toBe(0xafe00000);
    expect(word('LDW R0, SB, 4')).toBe(0x80d00004);
    expect(word('LDB R1, R0, -1')).toBe(0x910fffff);
    expect(word('ADD R1, R2, -1')).toBe(0x5128ffff); // v=1: ones-extended immediate
    expect(word('MOV R3, H')).toBe(0x23000000);
    expect(word('FLOOR R0, R0, R1')).toBe(0x100c0001);
    expect(word('FLT R0, R0, R1')).toBe(0x200c0001);
  });

  it('resolves labels forwards and backwards into PC-relative word offsets, with links', () => {
    const p = assemble('start: B next\nMOV R0, R0\nnext: BLEQ start\nBL 0');
    expect(p.words[0] >>> 0).toBe(0xe7000001); // skip one word
    expect(p.words[2] >>> 0).toBe(0xf1fffffd); // back to start, linking, on EQ
    expect(p.words[3] >>> 0).toBe(0xf7fffffc);
    expect(p.symbols.get('next')).toBe(8);
  });

  it('reads BLE/BLS/BLT as conditions and BL<cond> as linking branches', () => {
    expect(word('BLE 4') >>> 24).toBe(0xe6);
    expect(word('BLS 4') >>> 24).toBe(0xe4);
    expect(word('BLLE 4') >>> 24).toBe(0xf6);
    expect(word('BNV 4') >>> 24).toBe(0xef);
  });

  it('supports constants, .word, .org, Wirth hex, characters and comments', () => {
    const p = assemble(`K = 10H + 2 (* a constant *)
      MOV R1, K      ; comment
      .word 0CAFEH, 'A'
      .org 20H
      end: MOV R2, end // comment`);
    expect(p.words[0] >>> 0).toBe(0x40000012 | 0x01000000);
    expect(Array.from(p.words.slice(1, 3))).toEqual([0xcafe, 65]);
    expect(p.words.length).toBe(9);
    expect(p.words[8] & 0xffff).toBe(0x20);
  });

  it('reports the line of a mistake with a reason', () => {
    expect(() => assemble('MOV R1, 1\nFOO R1, R2')).toThrow(AsmError);
    expect(() => assemble('MOV R1, 1\nFOO R1, R2')).toThrow(/line 2: unknown instruction "FOO"/);
    expect(() => assemble('ADD R1, R2, 70000H')).toThrow(/does not fit in 16 bits/);
    expect(() => assemble('B nowhere')).toThrow(/unknown symbol "nowhere"/);
    expect(() => assemble('LDW R1, R16, 0')).toThrow(/not a register/);
  });
});
