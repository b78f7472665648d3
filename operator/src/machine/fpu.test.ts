// The FPU against the oracle: 14,372 FAD/FSB/FML/FDV results of Wirth's 2016 hardware revisions
// (FPAdder: a zero sum is +0; FPDivider: rounds), taken from the reference C emulator that models
// them. Every vector must match in fpu.ts itself, in the interpreter and in translated code,
// because ORP runs on this FPU: its REAL constants are only right if these are.
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { assemble } from './asm.ts';
import { Risc5 } from './cpu.ts';
import { fpAdd, fpDiv, fpMul } from './fpu.ts';

type Op = 'FAD' | 'FSB' | 'FML' | 'FDV';
interface Vector {
  op: Op;
  x: number;
  y: number;
  expected: number;
}

const VECTORS_FILE = path.join(import.meta.dirname, 'testdata', 'risc5-fpu-vectors.tsv.gz');

function loadVectors(): Vector[] {
  const text = zlib.gunzipSync(fs.readFileSync(VECTORS_FILE)).toString('utf8');
  const out: Vector[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const [op, x, y, u, v, expected] = line.split('\t');
    if (u !== '0' || v !== '0') throw new Error(`vector with u/v set: ${line}`);
    out.push({
      op: op as Op,
      x: parseInt(x, 16) | 0,
      y: parseInt(y, 16) | 0,
      expected: parseInt(expected, 16) | 0,
    });
  }
  return out;
}

const vectors = loadVectors();
const hex = (v: number) => (v >>> 0).toString(16).padStart(8, '0');

function direct(v: Vector): number {
  switch (v.op) {
    case 'FAD':
      return fpAdd(v.x, v.y, false, false);
    case 'FSB':
      return fpAdd(v.x, v.y ^ 0x80000000, false, false);
    case 'FML':
      return fpMul(v.x, v.y);
    default:
      return fpDiv(v.x, v.y);
  }
}

/**
 * Run every vector of one operation through a RISC5 loop (load x and y, operate, store) on the
 * interpreter or with the translator, which translates the loop after its first entries.
 */
function onCpu(op: Op, list: Vector[], jit: boolean): { results: Int32Array; translations: number } {
  const X = 0x10000;
  const Y = X + list.length * 4;
  const Z = Y + list.length * 4;
  const memBytes = 0x40000;
  const cpu = new Risc5(
    memBytes,
    memBytes,
    { ioRead: () => 0, ioWrite: () => {}, voidFetch: () => {} },
    {
      jit,
      hotBlock: 2,
    },
  );
  const prog = assemble(`
      MOV' R1, ${X >>> 16}
      IOR R1, R1, ${X & 0xffff}
      MOV' R2, ${Y >>> 16}
      IOR R2, R2, ${Y & 0xffff}
      MOV' R3, ${Z >>> 16}
      IOR R3, R3, ${Z & 0xffff}
      MOV R4, ${list.length}
loop: LDW R5, R1, 0
      LDW R6, R2, 0
      ${op} R7, R5, R6
      STW R7, R3, 0
      ADD R1, R1, 4
      ADD R2, R2, 4
      ADD R3, R3, 4
      SUB R4, R4, 1
      BNE loop
halt: B halt
`);
  cpu.mem.set(prog.words);
  list.forEach((v, i) => {
    cpu.mem[(X >>> 2) + i] = v.x;
    cpu.mem[(Y >>> 2) + i] = v.y;
  });
  cpu.pc = 0;
  const halt = (prog.symbols.get('halt') ?? -1) >>> 2;
  // Short runs: the translator compiles hot blocks at the end of a run, then later runs use them.
  for (let guard = 0; cpu.pc !== halt && guard < 100_000; guard++) cpu.run(997);
  expect(cpu.pc).toBe(halt);
  return { results: cpu.mem.slice(Z >>> 2, (Z >>> 2) + list.length), translations: cpu.translations };
}

describe('the FPU matches Wirth 2016 hardware on 14,372 vectors', () => {
  it('holds all four operations in the oracle file', () => {
    const counts = new Map<string, number>();
    for (const v of vectors) counts.set(v.op, (counts.get(v.op) ?? 0) + 1);
    expect(vectors.length).toBeGreaterThanOrEqual(14_000);
    for (const op of ['FAD', 'FSB', 'FML', 'FDV']) expect(counts.get(op)).toBeGreaterThan(3000);
  });

  it('fpu.ts: every vector', () => {
    const wrong = vectors.filter((v) => direct(v) !== v.expected);
    expect(
      wrong
        .slice(0, 5)
        .map((v) => `${v.op} ${hex(v.x)} ${hex(v.y)} → ${hex(direct(v))}, want ${hex(v.expected)}`),
    ).toEqual([]);
    expect(wrong.length).toBe(0);
  });

  it('the named cases: 1.0/3.0 rounds to 3EAAAAAB; 0.0 ± 0.0 and -0.0 + -0.0 give +0', () => {
    expect(hex(fpDiv(0x3f800000, 0x40400000))).toBe('3eaaaaab');
    expect(hex(fpAdd(0, 0, false, false))).toBe('00000000');
    expect(hex(fpAdd(0, 0 ^ 0x80000000, false, false))).toBe('00000000'); // FSB 0.0, 0.0
    expect(hex(fpAdd(0x80000000, 0x80000000, false, false))).toBe('00000000');
    expect(hex(fpAdd(0, 0x3f800000, false, false))).toBe('3f800000'); // 0 + 1.0 is still y
  });

  for (const jit of [false, true]) {
    it(`${jit ? 'translated code' : 'the interpreter'}: every vector through FAD/FSB/FML/FDV instructions`, () => {
      for (const op of ['FAD', 'FSB', 'FML', 'FDV'] as const) {
        const list = vectors.filter((v) => v.op === op);
        const { results, translations } = onCpu(op, list, jit);
        if (jit) expect(translations, 'the loop ran as translated code').toBeGreaterThan(0);
        const wrong = list.flatMap((v, i) =>
          results[i] === v.expected
            ? []
            : [`${op} ${hex(v.x)} ${hex(v.y)} → ${hex(results[i])}, want ${hex(v.expected)}`],
        );
        expect(wrong.slice(0, 5), `${op}: ${wrong.length} of ${list.length} differ`).toEqual([]);
      }
    });
  }
});
