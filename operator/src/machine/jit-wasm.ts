// The translator's WebAssembly encoding (jit.ts): opcodes, LEB128, sections, the locals of
// translated code and the dispatcher module. Bytes only; what a block does is
// jit-translate.ts's, how blocks become a module jit-group.ts's.

import { CELL, type MemoryLayout } from './jit-layout.ts';

export const OP = {
  unreachable: 0x00,
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  br: 0x0c,
  brTable: 0x0e,
  return: 0x0f,
  call: 0x10,
  callIndirect: 0x11,
  returnCallIndirect: 0x13,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  globalGet: 0x23,
  i32Load: 0x28,
  i32Load8u: 0x2d,
  i32Store: 0x36,
  i32Store8: 0x3a,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32Eq: 0x46,
  i32LtS: 0x48,
  i32LtU: 0x49,
  i32GtS: 0x4a,
  i32GeS: 0x4e,
  i32GeU: 0x4f,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Mul: 0x6c,
  i32DivS: 0x6d,
  i32DivU: 0x6e,
  i32RemS: 0x6f,
  i32RemU: 0x70,
  i32And: 0x71,
  i32Or: 0x72,
  i32Xor: 0x73,
  i32Shl: 0x74,
  i32ShrS: 0x75,
  i32ShrU: 0x76,
  i32Rotr: 0x78,
  i64Mul: 0x7e,
  i64ShrU: 0x88,
  i32WrapI64: 0xa7,
  i64ExtendS: 0xac,
  i64ExtendU: 0xad,
  i32: 0x7f,
  void: 0x40,
} as const;

export const FN = { ioRead: 0, ioWrite: 1, invalidate: 2, complexOp: 3, count: 4 } as const;
// Locals: r0..r15 are the registers, then the flags and scratch; `next` is the index of the block
// to run next in a group (jit-group.ts). Local l is wasm local l + LOCAL_BASE: local 0 is the
// parameter, the table slot the function was called through.
export const L = {
  nz: 16,
  C: 17,
  V: 18,
  x: 19,
  y: 20,
  r: 21,
  ad: 22,
  w: 23,
  pc: 24,
  count: 25,
  next: 26,
} as const;
export const LOCALS = 27;
export const LOCAL_BASE = 1;

/**
 * Writes the instructions the code generators (jit-translate.ts, jit-group.ts) use most into
 * `out`. Local l is wasm local l + LOCAL_BASE. Its functions are fields, so a generator can take
 * them apart (`const { get, set } = emit(b)`).
 */
export function emit(out: number[]) {
  return {
    get: (l: number) => out.push(OP.localGet, l + LOCAL_BASE),
    set: (l: number) => out.push(OP.localSet, l + LOCAL_BASE),
    tee: (l: number) => out.push(OP.localTee, l + LOCAL_BASE),
    i32: (v: number) => {
      out.push(OP.i32Const);
      sleb(out, v);
    },
    /** A load of a word (aligned) or of a byte. */
    load: (offset: number, op: number = OP.i32Load) => {
      out.push(op, op === OP.i32Load ? 2 : 0);
      uleb(out, offset);
    },
    store: (offset: number, op: number = OP.i32Store) => {
      out.push(op, op === OP.i32Store ? 2 : 0);
      uleb(out, offset);
    },
    br: (depth: number) => {
      out.push(OP.br);
      uleb(out, depth);
    },
  };
}

export function uleb(out: number[], n: number): void {
  let v = n >>> 0;
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
}

export function sleb(out: number[], n: number): void {
  let v = n | 0;
  for (;;) {
    const b = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (b & 0x40) === 0) || (v === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return;
    }
    out.push(b | 0x80);
  }
}

export function section(out: number[], id: number, body: number[]): void {
  out.push(id);
  uleb(out, body.length);
  for (const b of body) out.push(b);
}

export function name(out: number[], s: string): void {
  uleb(out, s.length);
  for (let i = 0; i < s.length; i++) out.push(s.charCodeAt(i));
}

export function funcType(params: number, result: boolean): number[] {
  return [
    0x60,
    params,
    ...new Array<number>(params).fill(OP.i32),
    result ? 1 : 0,
    ...(result ? [OP.i32] : []),
  ];
}

export function importEntry(out: number[], field: string, desc: number[]): void {
  name(out, 'j');
  name(out, field);
  out.push(...desc);
}

export const MAGIC = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
export const TABLE_IMPORT = [0x01, 0x70, 0x00, 0x00]; // a funcref table, no minimum of its own
export const MEMORY_IMPORT = [0x02, 0x00, 0x00]; // a memory, no minimum of its own

/**
 * The dispatcher: run(pc, budget) calls the block at pc through the table (see CodeSpace), with
 * its slot as the argument (jit-group.ts); a block jumps on into the next translated one itself
 * (jit-group.ts), and returns when the chain ends, where this loop checks the same conditions
 * again and returns the PC.
 */
export function dispatcherBytes(layout: MemoryLayout): Uint8Array {
  const out = [...MAGIC];
  section(out, 1, [2, ...funcType(1, true), ...funcType(2, true)]);
  const imports: number[] = [2];
  importEntry(imports, 'm', MEMORY_IMPORT);
  importEntry(imports, 't', TABLE_IMPORT);
  section(out, 2, imports);
  section(out, 3, [1, 1]);
  const exp: number[] = [1];
  name(exp, 'run');
  exp.push(0x00, 0);
  section(out, 7, exp);
  const PC = 0;
  const BUDGET = 1;
  const SLOT = 2;
  const b: number[] = [1, 1, OP.i32]; // one extra local: the slot
  const cell = (c: number) => layout.memBytes + c * 4;
  const returnPcIf = () => b.push(OP.if, OP.void, OP.localGet, PC, OP.return, OP.end);
  b.push(OP.i32Const, 0, OP.localGet, BUDGET, OP.i32Store, 2, ...ulebBytes(cell(CELL.budget)));
  b.push(OP.loop, OP.void);
  b.push(OP.localGet, PC, OP.i32Const, ...slebBytes(layout.memBytes >>> 2), OP.i32GeU);
  returnPcIf();
  b.push(OP.localGet, PC, OP.i32Const, 2, OP.i32Shl, OP.i32Load, 2, ...ulebBytes(layout.slotBase));
  b.push(OP.localTee, SLOT, OP.i32Eqz);
  returnPcIf();
  b.push(OP.localGet, SLOT, OP.localGet, SLOT, OP.callIndirect, 0, 0, OP.localSet, PC);
  b.push(OP.i32Const, 0, OP.i32Load, 2, ...ulebBytes(cell(CELL.stop)));
  returnPcIf();
  b.push(OP.i32Const, 0, OP.i32Load, 2, ...ulebBytes(cell(CELL.instr)), OP.localGet, BUDGET, OP.i32GeS);
  returnPcIf();
  b.push(OP.br, 0, OP.end, OP.localGet, PC, OP.end);
  const code: number[] = [1];
  uleb(code, b.length);
  code.push(...b);
  section(out, 10, code);
  return Uint8Array.from(out);
}

export function ulebBytes(n: number): number[] {
  const out: number[] = [];
  uleb(out, n);
  return out;
}

function slebBytes(n: number): number[] {
  const out: number[] = [];
  sleb(out, n);
  return out;
}
