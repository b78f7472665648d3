// A small RISC5 assembler in Wirth's notation, for CPU conformance programs and boot code.
//
//   label:  MOV R1, 5          ; comment (also // and (* ... *))
//           MOV R1, R2         ADD R1, R2, R3      ADD R1, R2, -1     ADC / SBC (u bit)
//           MOV' R1, 1234H     (also MOVH: R1 := imm << 16)   MOV R1, H   MOV R1, FLAGS
//           LSL ASR ROR AND ANN IOR XOR SUB MUL MULU DIV DIVU FAD FSB FML FDV
//           FLT R1, R2, R3     (FAD with u)       FLOOR R1, R2, R3 (FAD with v)
//           LDW R1, R2, 8      LDB  STW  STB      (address = R2 + signed 20-bit offset)
//           B label  BEQ label  BLNE label  B R15  BL R3   (conditions MI EQ CS VS LS LT LE
//           PL NE CC VC HI GE GT NV; B and BR are "always"; an L after B links to R15)
//           .word 12345678H    .org 100H (word-aligned byte address, pads with zeros)
//           name = expression  (a constant)
// Registers: R0..R15, MT = R12, SB = R13, SP = R14, LNK = R15.
// Numbers: 123, -5, 0x1F, 1FH (Wirth's hex), 'A' (a character); labels and + - in expressions.

export interface AsmResult {
  /** The program as words, starting at the origin given to assemble(). */
  words: Int32Array;
  /** Label and constant values (labels are byte addresses). */
  symbols: Map<string, number>;
}

export class AsmError extends Error {
  constructor(line: number, text: string, message: string) {
    super(`line ${line}: ${message} (in "${text.trim()}")`);
    this.name = 'AsmError';
  }
}

const REG_OPS: Record<string, number> = {
  MOV: 0,
  LSL: 1,
  ASR: 2,
  ROR: 3,
  AND: 4,
  ANN: 5,
  IOR: 6,
  XOR: 7,
  ADD: 8,
  SUB: 9,
  MUL: 10,
  DIV: 11,
  FAD: 12,
  FSB: 13,
  FML: 14,
  FDV: 15,
};
const CONDS: Record<string, number> = {
  MI: 0,
  EQ: 1,
  CS: 2,
  VS: 3,
  LS: 4,
  LT: 5,
  LE: 6,
  '': 7,
  R: 7,
  AL: 7,
  PL: 8,
  NE: 9,
  CC: 10,
  VC: 11,
  HI: 12,
  GE: 13,
  GT: 14,
  NV: 15,
};
const REG_ALIASES: Record<string, number> = { MT: 12, SB: 13, SP: 14, LNK: 15 };

interface Line {
  no: number;
  text: string;
  label?: string;
  op?: string;
  args: string[];
}

function stripComments(src: string): string {
  return src.replace(/\(\*[\s\S]*?\*\)/g, (m) => m.replace(/[^\n]/g, ' '));
}

function parseLines(src: string): Line[] {
  const out: Line[] = [];
  stripComments(src)
    .split('\n')
    .forEach((raw, idx) => {
      let text = raw;
      const semi = text.search(/;|\/\//);
      if (semi >= 0 && !/'.*;.*'/.test(text)) text = text.slice(0, semi);
      let rest = text.trim();
      const line: Line = { no: idx + 1, text: raw, args: [] };
      const lab = /^([A-Za-z_][\w.]*)\s*:/.exec(rest);
      if (lab) {
        line.label = lab[1];
        rest = rest.slice(lab[0].length).trim();
      }
      const cst = /^([A-Za-z_]\w*)\s*=\s*(.+)$/.exec(rest);
      if (cst) {
        line.op = '=';
        line.args = [cst[1], cst[2]];
      } else if (rest !== '') {
        const m = /^(\S+)\s*(.*)$/.exec(rest);
        if (m) {
          line.op = m[1].toUpperCase();
          line.args = m[2].trim() === '' ? [] : m[2].split(',').map((s) => s.trim());
        }
      }
      if (line.label !== undefined || line.op !== undefined) out.push(line);
    });
  return out;
}

function regNum(s: string): number | undefined {
  const u = s.toUpperCase();
  if (u in REG_ALIASES) return REG_ALIASES[u];
  const m = /^R(\d{1,2})$/.exec(u);
  if (m) {
    const n = Number(m[1]);
    if (n < 16) return n;
  }
  return undefined;
}

function evalExpr(expr: string, syms: Map<string, number>, strict: boolean): number {
  const tokens = expr.match(/'.'|[0-9][0-9A-Fa-f]*H\b|0[xX][0-9A-Fa-f]+|\d+|[A-Za-z_][\w.]*|[+-]/g);
  if (!tokens || tokens.join('').replace(/\s/g, '') !== expr.replace(/\s/g, '')) {
    throw new Error(`cannot read the expression "${expr}"`);
  }
  let total = 0;
  let sign = 1;
  let expectTerm = true;
  for (const t of tokens) {
    if (t === '+' || t === '-') {
      if (expectTerm) sign *= t === '-' ? -1 : 1;
      else {
        sign = t === '-' ? -1 : 1;
        expectTerm = true;
      }
      continue;
    }
    let v: number;
    if (t.startsWith("'")) v = t.charCodeAt(1);
    else if (/^[0-9][0-9A-Fa-f]*H$/.test(t)) v = Number.parseInt(t.slice(0, -1), 16);
    else if (/^0[xX]/.test(t)) v = Number.parseInt(t.slice(2), 16);
    else if (/^\d+$/.test(t)) v = Number(t);
    else {
      const s = syms.get(t);
      if (s === undefined) {
        if (strict) throw new Error(`unknown symbol "${t}"`);
        v = 0;
      } else v = s;
    }
    total += sign * v;
    sign = 1;
    expectTerm = false;
  }
  return total;
}

/** Assemble src placed at byte address `origin` (word aligned). Throws AsmError with the line. */
export function assemble(src: string, origin = 0): AsmResult {
  const lines = parseLines(src);
  const syms = new Map<string, number>();
  // Pass 1: sizes and labels. Pass 2: encode.
  for (let pass = 1; pass <= 2; pass++) {
    const strict = pass === 2;
    const words: number[] = [];
    let pcByte = origin;
    for (const ln of lines) {
      try {
        if (ln.label !== undefined) {
          if (pass === 1 && syms.has(ln.label)) throw new Error(`label "${ln.label}" defined twice`);
          syms.set(ln.label, pcByte);
        }
        if (ln.op === undefined) continue;
        if (ln.op === '=') {
          syms.set(ln.args[0], evalExpr(ln.args[1], syms, strict));
          continue;
        }
        if (ln.op === '.ORG') {
          const target = evalExpr(ln.args[0], syms, true);
          if (target < pcByte || target % 4 !== 0)
            throw new Error('.org must move forward to a word boundary');
          while (pcByte < target) {
            words.push(0);
            pcByte += 4;
          }
          continue;
        }
        const ws =
          ln.op === '.WORD'
            ? ln.args.map((a) => evalExpr(a, syms, strict) | 0)
            : [encode(ln, pcByte, syms, strict)];
        for (const w of ws) {
          words.push(w);
          pcByte += 4;
        }
      } catch (e) {
        if (e instanceof AsmError) throw e;
        throw new AsmError(ln.no, ln.text, (e as Error).message);
      }
    }
    if (pass === 2) return { words: Int32Array.from(words), symbols: syms };
  }
  throw new Error('unreachable');
}

function need(args: string[], n: number, op: string): void {
  if (args.length !== n) throw new Error(`${op} takes ${n} operand(s), got ${args.length}`);
}

function reg(s: string): number {
  const r = regNum(s);
  if (r === undefined) throw new Error(`"${s}" is not a register (R0..R15, MT, SB, SP, LNK)`);
  return r;
}

/** Immediate field: 0..FFFFH (v=0) or a negative value / value with all-ones upper half (v=1). */
function imm16(v: number): { bits: number; v: number } {
  if (v >= 0 && v <= 0xffff) return { bits: v, v: 0 };
  if (v >= -0x10000 && v < 0) return { bits: v & 0xffff, v: 1 };
  if (v >= 0xffff0000 && v <= 0xffffffff) return { bits: v & 0xffff, v: 1 };
  throw new Error(`immediate ${v} does not fit in 16 bits (use MOV' for the upper half)`);
}

function encode(ln: Line, pcByte: number, syms: Map<string, number>, strict: boolean): number {
  let op = ln.op ?? '';
  const args = ln.args;
  // Memory instructions.
  if (op === 'LDW' || op === 'LDB' || op === 'STW' || op === 'STB') {
    need(args, 3, op);
    const off = evalExpr(args[2], syms, strict);
    if (off < -0x80000 || off > 0x7ffff) throw new Error(`offset ${off} does not fit in 20 bits`);
    const u = op.startsWith('ST') ? 1 : 0;
    const v = op.endsWith('B') ? 1 : 0;
    return (
      0x80000000 | (u << 29) | (v << 28) | (reg(args[0]) << 24) | (reg(args[1]) << 20) | (off & 0xfffff) | 0
    );
  }
  // Branches: B, BL, Bcc, BLcc, BR.
  // "B" + condition first (BLE, BLS, BLT are conditions), else "BL" + condition (link).
  let bm: [string, string, string] | null = null;
  if (op.startsWith('B') && op.slice(1) in CONDS) bm = [op, '', op.slice(1)];
  else if (op.startsWith('BL') && op.slice(2) in CONDS) bm = [op, 'L', op.slice(2)];
  if (bm !== null) {
    need(args, 1, op);
    const cond = CONDS[bm[2]];
    const link = bm[1] === 'L' ? 1 : 0;
    const r = regNum(args[0]);
    if (r !== undefined) return 0xc0000000 | (link << 28) | (cond << 24) | r | 0;
    const target = evalExpr(args[0], syms, strict);
    const off = (target - (pcByte + 4)) / 4;
    if (strict && !Number.isInteger(off)) throw new Error('branch target is not word aligned');
    if (strict && (off < -0x800000 || off > 0x7fffff)) throw new Error('branch target out of range');
    return 0xe0000000 | (link << 28) | (cond << 24) | (off & 0xffffff) | 0;
  }
  // Register instructions and their aliases.
  let u = 0;
  let vfix = -1;
  if (op === "MOV'" || op === 'MOVH') {
    need(args, 2, op);
    const val = evalExpr(args[1], syms, strict);
    return 0x60000000 | (reg(args[0]) << 24) | (val & 0xffff) | 0;
  }
  if (
    op === 'MOV' &&
    args.length === 2 &&
    (args[1].toUpperCase() === 'H' || args[1].toUpperCase() === 'FLAGS')
  ) {
    const v = args[1].toUpperCase() === 'FLAGS' ? 1 : 0;
    return 0x20000000 | (v << 28) | (reg(args[0]) << 24) | 0;
  }
  const alias: Record<string, [string, number, number]> = {
    ADC: ['ADD', 1, -1],
    SBC: ['SUB', 1, -1],
    MULU: ['MUL', 1, -1],
    DIVU: ['DIV', 1, -1],
    FLT: ['FAD', 1, -1],
    FLOOR: ['FAD', 0, 1],
  };
  if (op in alias) {
    const [base, uu, vv] = alias[op];
    op = base;
    u = uu;
    vfix = vv;
  }
  if (!(op in REG_OPS)) throw new Error(`unknown instruction "${ln.op}"`);
  const opc = REG_OPS[op];
  let a: number;
  let b: number;
  let src: string;
  if (opc === 0) {
    need(args, 2, op);
    a = reg(args[0]);
    b = 0;
    src = args[1];
  } else {
    need(args, 3, op);
    a = reg(args[0]);
    b = reg(args[1]);
    src = args[2];
  }
  const c = regNum(src);
  let w = (u << 29) | (a << 24) | (b << 20) | (opc << 16);
  if (c !== undefined) {
    if (vfix === 1) w |= 1 << 28;
    w |= c;
  } else {
    const im = imm16(evalExpr(src, syms, strict));
    let v = im.v;
    if (vfix === 1) {
      // FLOOR with an immediate keeps v=1 for the operation; the immediate is then sign-extended.
      v = 1;
    }
    w |= 0x40000000 | (v << 28) | im.bits;
  }
  return w | 0;
}
