// The translator's WebAssembly encoding (jit.ts): opcodes, LEB128, the module of translated
// blocks and the dispatcher module. Bytes only; what a block does is jit-translate.ts's.

import { CELL, type MemoryLayout } from './jit-layout.ts';

export const OP = {
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  br: 0x0c,
  return: 0x0f,
  call: 0x10,
  callIndirect: 0x11,
  returnCallIndirect: 0x13,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
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
// Locals: r0..r15 are the registers, then the flags and scratch.
export const L = { nz: 16, C: 17, V: 18, x: 19, y: 20, r: 21, ad: 22, w: 23, pc: 24, count: 25 } as const;
export const LOCALS = 26;

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

function section(out: number[], id: number, body: number[]): void {
  out.push(id);
  uleb(out, body.length);
  for (const b of body) out.push(b);
}

function name(out: number[], s: string): void {
  uleb(out, s.length);
  for (let i = 0; i < s.length; i++) out.push(s.charCodeAt(i));
}

function funcType(params: number, result: boolean): number[] {
  return [
    0x60,
    params,
    ...new Array<number>(params).fill(OP.i32),
    result ? 1 : 0,
    ...(result ? [OP.i32] : []),
  ];
}

function importEntry(out: number[], field: string, desc: number[]): void {
  name(out, 'j');
  name(out, field);
  out.push(...desc);
}

const MAGIC = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
const TABLE_IMPORT = [0x01, 0x70, 0x00, 0x00]; // a funcref table, no minimum of its own
const MEMORY_IMPORT = [0x02, 0x00, 0x00]; // a memory, no minimum of its own

/**
 * A module of translated blocks: function i is exported as "i" (CodeSpace.install puts it in a
 * table, which the module imports so that a block can jump straight into the next one).
 */
export function blocksBytes(bodies: ArrayLike<number>[], generation = 0): Uint8Array {
  const out = [...MAGIC];
  // A custom section naming the generation (jit.ts): V8 hands out an earlier compiled module for
  // the same bytes, and one of another generation was compiled for another tier.
  if (generation !== 0) section(out, 0, [1, 0x67, generation & 0x7f]);
  // Types: 0 a block () → i32; 1 ioRead; 2 ioWrite; 3 invalidate; 4 complexOp.
  section(out, 1, [
    5,
    ...funcType(0, true),
    ...funcType(2, true),
    ...funcType(3, false),
    ...funcType(1, false),
    ...funcType(3, true),
  ]);
  const imports: number[] = [6];
  importEntry(imports, 'ioRead', [0x00, 1]);
  importEntry(imports, 'ioWrite', [0x00, 2]);
  importEntry(imports, 'invalidate', [0x00, 3]);
  importEntry(imports, 'complexOp', [0x00, 4]);
  importEntry(imports, 'm', MEMORY_IMPORT);
  importEntry(imports, 't', TABLE_IMPORT);
  section(out, 2, imports);
  const fns: number[] = [];
  uleb(fns, bodies.length);
  for (let i = 0; i < bodies.length; i++) fns.push(0);
  section(out, 3, fns);
  const exports: number[] = [];
  uleb(exports, bodies.length);
  bodies.forEach((_, i) => {
    name(exports, String(i));
    exports.push(0x00);
    uleb(exports, FN.count + i);
  });
  section(out, 7, exports);
  // The code section holds nearly all the bytes: written straight into the result (a body is
  // copied once, natively) instead of number by number through arrays.
  const head: number[] = [];
  uleb(head, bodies.length);
  const sizes = bodies.map((body) => ulebBytes(body.length + 4));
  let sectionLength = head.length;
  bodies.forEach((body, i) => {
    sectionLength += sizes[i].length + body.length + 4;
  });
  out.push(10);
  uleb(out, sectionLength);
  for (const x of head) out.push(x);
  const bytes = new Uint8Array(out.length + sectionLength - head.length);
  bytes.set(out);
  let at = out.length;
  bodies.forEach((body, i) => {
    bytes.set(sizes[i], at);
    at += sizes[i].length;
    bytes[at++] = 1; // one local declaration: LOCALS locals of type i32
    bytes[at++] = LOCALS;
    bytes[at++] = OP.i32;
    bytes.set(body, at);
    at += body.length;
    bytes[at++] = OP.end;
  });
  return bytes;
}

/**
 * The dispatcher: run(pc, budget) calls the block at pc through the table (see CodeSpace); a
 * block jumps on into the next translated one itself (jit-translate.ts), and returns when the
 * chain ends, where this loop checks the same conditions again and returns the PC.
 */
export function dispatcherBytes(layout: MemoryLayout): Uint8Array {
  const out = [...MAGIC];
  section(out, 1, [2, ...funcType(0, true), ...funcType(2, true)]);
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
  b.push(OP.localGet, SLOT, OP.callIndirect, 0, 0, OP.localSet, PC);
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

function ulebBytes(n: number): number[] {
  const out: number[] = [];
  uleb(out, n);
  return out;
}

function slebBytes(n: number): number[] {
  const out: number[] = [];
  sleb(out, n);
  return out;
}
