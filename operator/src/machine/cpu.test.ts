import { describe, expect, it } from 'vitest';
import { assemble } from './asm.ts';
import { type IoBus, Risc5 } from './cpu.ts';

// Every program runs twice: on the interpreter and on the block translator; both must agree.
let jitMode = false;

/** Run a conformance program until it reaches the label `halt` (a branch to itself). */
function exec(src: string, bus?: Partial<IoBus>): Risc5 {
  if (!jitMode) {
    jitMode = true;
    try {
      const j = exec(src, bus);
      const i = execOn(src, bus, false);
      expect(Array.from(j.R), 'translator and interpreter agree on registers').toEqual(Array.from(i.R));
      expect([j.nz < 0, j.nz === 0, j.C, j.V, j.H], 'and on flags and H').toEqual([
        i.nz < 0,
        i.nz === 0,
        i.C,
        i.V,
        i.H,
      ]);
      return j;
    } finally {
      jitMode = false;
    }
  }
  return execOn(src, bus, true);
}

function execOn(src: string, bus: Partial<IoBus> | undefined, jit: boolean): Risc5 {
  const prog = assemble(`${src}\nhalt: B halt\n`);
  const io: IoBus = {
    ioRead: bus?.ioRead ?? (() => 0),
    ioWrite: bus?.ioWrite ?? (() => {}),
    voidFetch: bus?.voidFetch ?? (() => {}),
  };
  const cpu = new Risc5(0x10000, 0xf000, io, { jit });
  cpu.mem.set(prog.words);
  cpu.pc = 0;
  const halt = (prog.symbols.get('halt') as number) >>> 2;
  for (let i = 0; i < 1000 && cpu.pc !== halt; i++) cpu.run(1);
  expect(cpu.pc, `program reached halt (${jit ? 'translator' : 'interpreter'})`).toBe(halt);
  expect(cpu.pc, 'program reached halt').toBe(halt);
  return cpu;
}

const u32 = (v: number) => v >>> 0;
const f32 = (x: number) => {
  const b = new DataView(new ArrayBuffer(4));
  b.setFloat32(0, x);
  return b.getInt32(0);
};
const asF = (bits: number) => {
  const b = new DataView(new ArrayBuffer(4));
  b.setInt32(0, bits);
  return b.getFloat32(0);
};

/** Load a 32-bit constant into a register (MOV' high half, IOR low half). */
const li = (r: string, v: number) => `MOV' ${r}, ${(v >>> 16) & 0xffff}\nIOR ${r}, ${r}, ${v & 0xffff}`;

describe('RISC5 register instructions', () => {
  it("moves immediates zero-extended (v=0), ones-extended (v=1) and into the upper half (MOV')", () => {
    const c = exec(`MOV R1, 0FFFFH\nMOV R2, -2\nMOV' R3, 1234H\nMOV R4, R3`);
    expect(c.R[1]).toBe(0xffff);
    expect(u32(c.R[2])).toBe(0xfffffffe);
    expect(u32(c.R[3])).toBe(0x12340000);
    expect(u32(c.R[4])).toBe(0x12340000);
  });

  it('shifts by the operand modulo 32: LSL, ASR (sign-propagating), ROR', () => {
    const c = exec(`${li('R1', 0x80000001)}
      LSL R2, R1, 1
      ASR R3, R1, 4
      ROR R4, R1, 1
      MOV R9, 33
      LSL R5, R1, R9
      ROR R6, R1, 0
      ASR R7, R1, 31`);
    expect(u32(c.R[2])).toBe(0x00000002);
    expect(u32(c.R[3])).toBe(0xf8000000);
    expect(u32(c.R[4])).toBe(0xc0000000);
    expect(u32(c.R[5])).toBe(0x00000002);
    expect(u32(c.R[6])).toBe(0x80000001);
    expect(u32(c.R[7])).toBe(0xffffffff);
  });

  it('does the logic operations AND, ANN (and-not), IOR, XOR', () => {
    const c = exec(`MOV R1, 0F0F0H\nMOV R2, 0FF00H
      AND R3, R1, R2\nANN R4, R1, R2\nIOR R5, R1, R2\nXOR R6, R1, R2`);
    expect(c.R[3]).toBe(0xf000);
    expect(c.R[4]).toBe(0x00f0);
    expect(c.R[5]).toBe(0xfff0);
    expect(c.R[6]).toBe(0x0ff0);
  });

  it('sets N and Z on every register write, including loads and the link of BL', () => {
    let c = exec('MOV R1, -5');
    expect(c.N).toBe(true);
    expect(c.Z).toBe(false);
    c = exec('MOV R1, 0');
    expect(c.Z).toBe(true);
    c = exec(`MOV R1, 0\nMOV R2, 100H\nSTW R1, R2, 0\nMOV R3, 1\nLDW R3, R2, 0`);
    expect(c.Z).toBe(true);
    c = exec(`MOV R1, 0\nBL next\nnext:`);
    expect(c.R[15]).toBe(8);
    expect(c.Z).toBe(false);
  });

  it('sets carry and overflow on ADD: unsigned wrap gives C, signed overflow gives V', () => {
    let c = exec(`${li('R1', 0xffffffff)}\nADD R2, R1, 1`);
    expect(c.R[2]).toBe(0);
    expect([c.C, c.V, c.Z]).toEqual([1, 0, true]);
    c = exec(`${li('R1', 0x7fffffff)}\nADD R2, R1, 1`);
    expect(u32(c.R[2])).toBe(0x80000000);
    expect([c.C, c.V, c.N]).toEqual([0, 1, true]);
    c = exec(`${li('R1', 0x80000000)}\nADD R2, R1, R1`);
    expect([c.R[2], c.C, c.V]).toEqual([0, 1, 1]);
  });

  it('sets borrow and overflow on SUB and compares signed and unsigned through the branch conditions', () => {
    let c = exec('MOV R1, 1\nSUB R2, R1, 2');
    expect([c.R[2], c.C, c.V, c.N]).toEqual([-1, 1, 0, true]);
    c = exec(`${li('R1', 0x80000000)}\nSUB R2, R1, 1`);
    expect([u32(c.R[2]), c.C, c.V]).toEqual([0x7fffffff, 0, 1]);
    // 5 vs 3, -1 vs 3 (signed less, unsigned higher)
    c = exec(`MOV R1, 5\nMOV R2, 0\nSUB R0, R1, 3\nBLE skip\nMOV R2, 1\nskip:
      MOV R3, -1\nMOV R4, 0\nMOV R5, 0\nSUB R0, R3, 3\nBGE s2\nMOV R4, 1\ns2: BLS s3\nMOV R5, 1\ns3:`);
    expect([c.R[2], c.R[4], c.R[5]]).toEqual([1, 1, 1]);
  });

  it('adds and subtracts with carry (ADC/SBC) for 64-bit arithmetic', () => {
    // (0x00000001_FFFFFFFF + 0x00000000_00000001) = 0x00000002_00000000
    const c = exec(`${li('R1', 0xffffffff)}\nMOV R2, 1\nADD R3, R1, 1\nADC R4, R2, 0
      MOV R5, 0\nMOV R6, 2\nSUB R7, R5, 1\nSBC R8, R6, 0`);
    expect([c.R[3], c.R[4]]).toEqual([0, 2]);
    expect([u32(c.R[7]), c.R[8]]).toEqual([0xffffffff, 1]);
  });

  it('multiplies signed (MUL) and unsigned (MULU) with the high word in H', () => {
    const c = exec(`${li('R1', 0xfffffffe)}\nMOV R2, 3\nMUL R3, R1, R2\nMOV R4, H
      MULU R5, R1, R2\nMOV R6, H
      ${li('R7', 0x12345678)}\n${li('R8', 0x9abcdef0)}\nMULU R9, R7, R8\nMOV R10, H\nMUL R11, R7, R8\nMOV R12, H`);
    expect([c.R[3], c.R[4]]).toEqual([-6, -1]);
    expect([u32(c.R[5]), c.R[6]]).toEqual([0xfffffffa, 2]);
    const pu = 0x12345678n * 0x9abcdef0n;
    expect(u32(c.R[9])).toBe(Number(pu & 0xffffffffn));
    expect(u32(c.R[10])).toBe(Number(pu >> 32n));
    const ps = 0x12345678n * BigInt.asIntN(32, 0x9abcdef0n);
    expect(u32(c.R[12])).toBe(Number(BigInt.asUintN(32, ps >> 32n)));
    expect(c.R[11]).toBe(c.R[9]);
  });

  it('divides with floor semantics for positive divisors, remainder in H never negative', () => {
    const c = exec(`MOV R1, -7\nDIV R2, R1, 2\nMOV R3, H\nMOV R4, 7\nDIV R5, R4, 2\nMOV R6, H
      ${li('R7', 0x80000000)}\nDIV R8, R7, 1\nMOV R9, H\nDIVU R10, R7, 3\nMOV R11, H`);
    expect([c.R[2], c.R[3]]).toEqual([-4, 1]);
    expect([c.R[5], c.R[6]]).toEqual([3, 1]);
    expect([u32(c.R[8]), c.R[9]]).toEqual([0x80000000, 0]);
    expect([c.R[10], c.R[11]]).toEqual([Math.floor(0x80000000 / 3), 0x80000000 % 3]);
  });

  // An independent model of Wirth's bit-serial restoring divider with a 64-bit register.
  function serialDivider(x: number, y: number, signed: boolean): [number, number] {
    const neg = signed && x < 0;
    let rq = BigInt(neg ? u32(-x) : u32(x));
    const yy = BigInt(u32(y));
    for (let s = 0; s < 32; s++) {
      const w0 = (rq >> 31n) & 0xffffffffn;
      const w1 = (w0 - yy) & 0xffffffffn;
      const low = (rq & 0x7fffffffn) << 1n;
      rq = w1 >= 0x80000000n ? (w0 << 32n) | low : (w1 << 32n) | low | 1n;
    }
    let q = Number(rq & 0xffffffffn) | 0;
    let r = Number(rq >> 32n) | 0;
    if (neg) {
      q = -q | 0;
      if (r !== 0) {
        q = (q - 1) | 0;
        r = (y - r) | 0;
      }
    }
    return [q, r];
  }

  it.each([
    [7, -2],
    [-7, -2],
    [100, -7],
    [5, 0],
    [-5, 0],
    [0, -1],
    [0x7fffffff, -0x80000000],
  ])('divides %i by %i (divisor ≤ 0) exactly as the hardware divider does, no trap', (x, y) => {
    for (const op of ['DIV', 'DIVU']) {
      const c = exec(`${li('R1', x)}\n${li('R2', y)}\n${op} R3, R1, R2\nMOV R4, H`);
      expect([c.R[3], c.R[4]]).toEqual(serialDivider(x, y, op === 'DIV'));
    }
    // A concrete hardware value: 7 DIV -2 is -1 (neither floor −4 nor truncation −3).
    expect(serialDivider(7, -2, true)[0]).toBe(-1);
  });

  it('reads the flags register (MOV with u=1, v=1) as N Z C V in bits 31..28 plus D0H', () => {
    const c = exec(`${li('R1', 0x7fffffff)}\nADD R2, R1, 1\nMOV R3, FLAGS`);
    expect(u32(c.R[3])).toBe(0x900000d0);
  });
});

describe('RISC5 memory and branches', () => {
  it('loads and stores words (low address bits ignored) and bytes (read-modify-write, little-endian)', () => {
    const c = exec(`${li('R1', 0x11223344)}\nMOV R2, 200H\nSTW R1, R2, 0\nLDW R3, R2, 2
      LDB R4, R2, 1\nMOV R5, 0AAH\nSTB R5, R2, 2\nLDW R6, R2, 0\nLDB R7, R2, 3\nSTW R1, R2, -4\nLDW R8, R2, -4`);
    expect(u32(c.R[3])).toBe(0x11223344);
    expect(c.R[4]).toBe(0x33);
    expect(u32(c.R[6])).toBe(0x11aa3344);
    expect(c.R[7]).toBe(0x11);
    expect(u32(c.R[8])).toBe(0x11223344);
  });

  it('sends loads and stores at or above the memory size to the I/O bus (bytes too)', () => {
    const writes: [number, number][] = [];
    const c = exec(`MOV R1, -64\nLDW R2, R1, 0\nMOV R3, 41H\nSTB R3, R1, 8\nSTW R3, R1, 4`, {
      ioRead: (a) => (a === 0xffffffc0 ? 1234 : 0),
      ioWrite: (a, v) => writes.push([a, v]),
    });
    expect(c.R[2]).toBe(1234);
    // (exec runs the program on the translator and then on the interpreter)
    expect(writes).toEqual([
      [0xffffffc8, 0x41],
      [0xffffffc4, 0x41],
      [0xffffffc8, 0x41],
      [0xffffffc4, 0x41],
    ]);
  });

  it('branches on all 16 conditions and links to R15 with BL', () => {
    // After SUB 1-2: N=1 Z=0 C=1 V=0. Count the taken branches in a bit mask.
    const conds = [
      'MI',
      'EQ',
      'CS',
      'VS',
      'LS',
      'LT',
      'LE',
      '',
      'PL',
      'NE',
      'CC',
      'VC',
      'HI',
      'GE',
      'GT',
      'NV',
    ];
    const body = conds
      .map((cc, i) => `SUB R0, R1, 2\nB${cc} t${i}\nB n${i}\nt${i}: IOR R5, R5, ${1 << i}\nn${i}:`)
      .join('\n');
    const c = exec(`MOV R1, 1\nMOV R5, 0\n${body}`);
    // taken: MI CS LS LT LE always | NE VC (and not PL EQ VS CC HI GE GT NV)
    const expected = [0, 2, 4, 5, 6, 7, 9, 11].reduce((m, i) => m | (1 << i), 0);
    expect(c.R[5]).toBe(expected);
  });

  it('branches to a register (byte address) and calls/returns with BL and B R15', () => {
    const c = exec(`MOV R1, 0\nBL sub\nADD R1, R1, 10\nB halt
      sub: ADD R1, R1, 1\nB R15`);
    expect(c.R[1]).toBe(11);
  });

  it('re-translates code that the program itself overwrites (as Oberon does when it loads modules)', () => {
    // Patch the immediate of the instruction at 'target' after running it once.
    const c = exec(`MOV R1, 0
      MOV R6, 2
    again: BL target
      MOV R3, R2
      LDW R4, R0, patch
      STW R4, R0, target
      SUB R6, R6, 1
      BNE again
      B halt
    target: MOV R2, 1
      B R15
    patch: MOV R2, 7`);
    expect([c.R[3], c.R[2]]).toEqual([7, 7]);
  });

  it('resets through the bus when it branches into the void (outside RAM and ROM)', () => {
    let voided = -1;
    const prog = assemble(`${li('R1', 0x40000000)}\nB R1`);
    const cpu = new Risc5(0x10000, 0xf000, {
      ioRead: () => 0,
      ioWrite: () => {},
      voidFetch: (pc) => {
        voided = pc;
        cpu.reset();
      },
    });
    cpu.mem.set(prog.words);
    cpu.pc = 0;
    cpu.run(4);
    expect(voided).toBe(0x40000000 >>> 2);
    expect(cpu.pc).toBe(0xfffff800 >>> 2);
  });
});

describe('RISC5 floating point (bit-exact to the hardware units)', () => {
  const fop = (op: string, a: number, b: number) =>
    exec(`${li('R1', a)}\n${li('R2', b)}\n${op} R3, R1, R2`).R[3];

  it('adds and subtracts exactly representable values exactly', () => {
    expect(asF(fop('FAD', f32(1.5), f32(2.25)))).toBe(3.75);
    expect(asF(fop('FSB', f32(1.5), f32(2.25)))).toBe(-0.75);
    expect(asF(fop('FAD', f32(-8), f32(0.5)))).toBe(-7.5);
    expect(fop('FSB', f32(3), f32(3))).toBe(0);
  });

  it('rounds a sum half-up on the magnitude (1 + 2^-24 becomes 1 + 2^-23, unlike IEEE even rounding)', () => {
    expect(u32(fop('FAD', f32(1), f32(2 ** -24)))).toBe(0x3f800001);
    expect(u32(fop('FAD', f32(1), f32(2 ** -25)))).toBe(0x3f800000);
  });

  it('treats a zero exponent as zero: x + 0 = x, 0 + y = y, and denormal inputs are zero', () => {
    expect(fop('FAD', f32(2.5), 0)).toBe(f32(2.5));
    expect(fop('FAD', 0, f32(-4))).toBe(f32(-4));
    expect(fop('FML', 0x00400000, f32(2))).toBe(0);
  });

  it('multiplies with the hardware rounding (half-up on the 24-bit mantissa), checked against an exact model', () => {
    const model = (a: number, b: number): number => {
      const ma = BigInt((a & 0x7fffff) | 0x800000);
      const mb = BigInt((b & 0x7fffff) | 0x800000);
      let e = ((a >>> 23) & 0xff) + ((b >>> 23) & 0xff) - 127;
      let m = ma * mb; // 47 or 48 bits
      let sh = 22n;
      if (m >= 1n << 47n) {
        e++;
        sh = 23n;
      }
      m = ((m >> sh) + 1n) >> 1n; // round half up at the bit below
      return u32((a ^ b) & 0x80000000) | (e << 23) | Number(m & 0x7fffffn);
    };
    const values = [1.1, 3.3, 0.1, 7, 1e10, -2.5, 1 / 3, 123.456, -0.007].map(f32);
    for (const a of values) for (const b of values) expect(u32(fop('FML', a, b))).toBe(u32(model(a, b)));
    expect(asF(fop('FML', f32(1.5), f32(-2)))).toBe(-3);
  });

  it('divides with a rounded quotient as the 2016 FPDivider (1/3 is 3EAAAAABH; the 2015 one truncated to 3EAAAAAAH)', () => {
    expect(u32(fop('FDV', f32(1), f32(3)))).toBe(0x3eaaaaab);
    expect(u32(fop('FDV', f32(1), f32(10)))).toBe(0x3dcccccd);
    expect(asF(fop('FDV', f32(7.5), f32(-2.5)))).toBe(-3);
  });

  it('gives the largest exponent for x/0 and on overflow, and zero on underflow', () => {
    expect(u32(fop('FDV', f32(1), 0))).toBe(0x7f800000);
    expect(u32(fop('FDV', f32(-1), 0))).toBe(0xff800000);
    expect((u32(fop('FML', f32(1e30), f32(1e30))) >>> 23) & 0xff).toBe(0xff);
    expect(fop('FML', f32(1e-30), f32(1e-30))).toBe(0);
    expect(fop('FDV', 0, f32(5))).toBe(0);
  });

  it('converts integers to reals (FLT: FAD with u) and reals to integers by flooring (FLOOR: FAD with v)', () => {
    const k = 0x4b000000; // the constant ORG emits as the second operand
    const flt = (n: number) => exec(`${li('R1', n)}\n${li('R2', k)}\nFLT R3, R1, R2`).R[3];
    const floor = (x: number) => exec(`${li('R1', f32(x))}\n${li('R2', k)}\nFLOOR R3, R1, R2`).R[3];
    expect(asF(flt(5))).toBe(5);
    expect(asF(flt(-3))).toBe(-3);
    expect(flt(0)).toBe(0);
    expect(asF(flt(1000000))).toBe(1000000);
    expect(floor(2.7)).toBe(2);
    expect(floor(-2.5)).toBe(-3);
    expect(floor(-2)).toBe(-2);
    expect(floor(123456.75)).toBe(123456);
  });
});
