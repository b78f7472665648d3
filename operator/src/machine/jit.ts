// A RISC5 → WebAssembly translator. A superblock (straight-line code up to an unconditional
// branch, conditional branches as side exits, at most LIMITS.maxBlock instructions) becomes one
// wasm function that runs those instructions against the machine's RAM, which lives in the same
// WebAssembly.Memory as everything the CPU owns (layout below). Registers sit in wasm locals for
// the whole block, flags too, and C/V are computed only where a later instruction or an exit can
// observe them. Hot blocks are compiled several to a module, placed in one function table, and a
// small wasm dispatcher calls block after block through that table.
//
// Why wasm and not generated JavaScript: V8 must warm each JavaScript function up through its
// tiers and may throw optimised code away when a path it never saw runs; a translated block paid
// about 1 ms of compiler time that way, more than a short compile job ever repays. A wasm block
// costs about 0.06 ms, has no speculation to lose, and calls between blocks stay inside wasm.
//
// Semantics are the interpreter's (cpu.ts), instruction for instruction: a block leaves after an
// I/O access that asks the CPU to stop, and after a store into translated code (Oberon loads
// modules by storing code), which invalidates the translations of that code's page.

import { fpAdd, fpDiv, fpMul, idiv, idivResult } from './fpu.ts';

export const LIMITS = {
  maxBlock: 64, // instructions per translated block (bounds module size and run(n) overshoot)
  pageShift: 8, // invalidation granularity: 256 words (1 KiB) of code
  hotBlock: 1000, // translate a block on its 1,000th entry: lower thresholds translate code that never repays its ~0.06 ms (bench/machine)
  knownBlock: 16, // ...or on its 16th where another CPU of the thread translated one: most likely the same code, already compiled
  batch: 16, // hot blocks compiled together in one wasm module (a module has a fixed cost of its own)
  batchDelay: 250_000, // ...or once the oldest has waited this many instructions (10 ms at 25 MHz), or at the end of run()
  sharedBlocks: 8192, // translations kept for every CPU of this thread (~1 KB each); the cache starts over when full
} as const;

/**
 * The machine's memory: RAM, then the registers and the cells that carry state between
 * JavaScript and translated code, then one code-mark byte per RAM word, then the table slot of
 * the block starting at each RAM word (0: none). Cell offsets are words from RAM's end.
 */
export const CELL = { nz: 16, C: 17, V: 18, H: 19, instr: 20, stop: 21, fb: 22 } as const;
const CELLS_BYTES = 128; // 16 registers + the cells above, rounded up
const WASM_PAGE = 65536;

export interface MemoryLayout {
  memBytes: number;
  codeMarkBase: number;
  slotBase: number;
}

export function memoryLayout(memBytes: number): MemoryLayout {
  const codeMarkBase = memBytes + CELLS_BYTES;
  const slotBase = (codeMarkBase + (memBytes >>> 2) + 3) & ~3;
  return { memBytes, codeMarkBase, slotBase };
}

// The project's lib (ES2024, no DOM) does not declare the WebAssembly global; the part used here.
interface WasmTable {
  readonly length: number;
  grow(delta: number): number;
  set(index: number, value: unknown): void;
}
/** A compiled module of translated blocks; its instances' exports are the block functions. */
type WasmModule = object;
type WasmInstance = { exports: Record<string, unknown> };
const WA = (
  globalThis as unknown as {
    WebAssembly: {
      Memory: new (d: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
      Table: new (d: { element: 'anyfunc'; initial: number }) => WasmTable;
      Module: new (bytes: Uint8Array) => WasmModule;
      Instance: new (module: WasmModule, imports: object) => WasmInstance;
    };
  }
).WebAssembly;

/** What translated code calls back (bound to one CPU). */
export interface JitImports {
  /** A device read at byte address ad by the k-th instruction of the block. */
  ioRead(ad: number, k: number): number;
  ioWrite(ad: number, value: number, k: number): void;
  /** A store hit translated code at word wi. */
  invalidate(wi: number): void;
  /** FAD/FSB/FML/FDV and DIV by a non-positive divisor; H travels in its cell. */
  complexOp(ir: number, b: number, c: number): number;
}

/**
 * Device registers whose reads always give the same value and change nothing (the SPI status:
 * always ready). Translated code answers them inline instead of calling out to JavaScript: a
 * disk transfer polls the status once per word, a third of all device accesses of a compile.
 */
export type FixedReads = ReadonlyArray<readonly [address: number, value: number]>;

/** Runs translated blocks from pc until untranslated code, a stop, or the budget; returns the PC. */
export type Dispatch = (pc: number, budget: number) => number;

/**
 * One CPU's translated code: the memory, the table of block functions, and the dispatcher — a
 * wasm loop that calls block after block without coming back to JavaScript.
 */
export class CodeSpace {
  readonly buffer: ArrayBuffer;
  readonly layout: MemoryLayout;
  readonly dispatch: Dispatch;
  private readonly table: WasmTable;
  private readonly imports: { j: Record<string, unknown> };
  private readonly freeSlots: number[] = [];
  private nextSlot = 1; // slot 0 means "no block"
  /** This CPU's instance of each shared module it took blocks from. */
  private readonly instances = new Map<WasmModule, WasmInstance>();

  constructor(memBytes: number, helpers: JitImports) {
    this.layout = memoryLayout(memBytes);
    const pages = Math.ceil((this.layout.slotBase + memBytes) / WASM_PAGE);
    const memory = new WA.Memory({ initial: pages, maximum: pages });
    this.buffer = memory.buffer;
    this.table = new WA.Table({ element: 'anyfunc', initial: 256 });
    this.imports = { j: { m: memory, t: this.table, ...helpers } };
    const dispatcher = new WA.Instance(new WA.Module(dispatcherBytes(this.layout)), this.imports);
    this.dispatch = dispatcher.exports.run as Dispatch;
  }

  /**
   * Put translations into this CPU's table; returns the slot of each. Those not compiled yet are
   * compiled together in one module. A compiled module is shared by every CPU of the thread
   * (each instantiates it against its own memory), so V8's optimised code for a block, once it
   * has tiered up, serves every machine running that code.
   */
  install(blocks: Translation[]): number[] {
    const fresh = blocks.filter((t) => t.compiled === undefined);
    if (fresh.length > 0) {
      const module = new WA.Module(blocksBytes(fresh.map((t) => t.body)));
      fresh.forEach((t, index) => {
        t.compiled = { module, index };
      });
    }
    return blocks.map((t) => {
      const c = t.compiled as { module: WasmModule; index: number };
      let instance = this.instances.get(c.module);
      if (instance === undefined) {
        instance = new WA.Instance(c.module, this.imports);
        this.instances.set(c.module, instance);
      }
      const slot = this.allocSlot();
      this.table.set(slot, instance.exports[String(c.index)]);
      return slot;
    });
  }

  free(slot: number): void {
    this.table.set(slot, null);
    this.freeSlots.push(slot);
  }

  private allocSlot(): number {
    const slot = this.freeSlots.pop();
    if (slot !== undefined) return slot;
    if (this.nextSlot >= this.table.length) this.table.grow(this.table.length);
    return this.nextSlot++;
  }
}

// ---------------------------------------------------------------- wasm encoding

const OP = {
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  br: 0x0c,
  return: 0x0f,
  call: 0x10,
  callIndirect: 0x11,
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

const FN = { ioRead: 0, ioWrite: 1, invalidate: 2, complexOp: 3, count: 4 } as const;
// Locals: r0..r15 are the registers, then the flags and scratch.
const L = { nz: 16, C: 17, V: 18, x: 19, y: 20, r: 21, ad: 22, w: 23, pc: 24, count: 25 } as const;
const LOCALS = 26;

function uleb(out: number[], n: number): void {
  let v = n >>> 0;
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
}

function sleb(out: number[], n: number): void {
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

/** A module of translated blocks: function i is exported as "i" (CodeSpace.install puts it in a table). */
function blocksBytes(bodies: number[][]): Uint8Array {
  const out = [...MAGIC];
  // Types: 0 a block () → i32; 1 ioRead; 2 ioWrite; 3 invalidate; 4 complexOp.
  section(out, 1, [
    5,
    ...funcType(0, true),
    ...funcType(2, true),
    ...funcType(3, false),
    ...funcType(1, false),
    ...funcType(3, true),
  ]);
  const imports: number[] = [5];
  importEntry(imports, 'ioRead', [0x00, 1]);
  importEntry(imports, 'ioWrite', [0x00, 2]);
  importEntry(imports, 'invalidate', [0x00, 3]);
  importEntry(imports, 'complexOp', [0x00, 4]);
  importEntry(imports, 'm', MEMORY_IMPORT);
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

/** The dispatcher: run(pc, budget) calls block after block through the table (see CodeSpace). */
function dispatcherBytes(layout: MemoryLayout): Uint8Array {
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

// ---------------------------------------------------------------- analysis

function isBranch(ir: number): boolean {
  return ir < 0 && (ir & 0x40000000) !== 0;
}

function readsCV(ir: number): boolean {
  if (ir >= 0) {
    const op = (ir >>> 16) & 15;
    const u = (ir & 0x20000000) !== 0;
    const q = (ir & 0x40000000) !== 0;
    if (op === 0 && u && !q && (ir & 0x10000000) !== 0) return true; // MOV flags
    return (op === 8 || op === 9) && u; // ADC, SBC
  }
  if ((ir & 0x40000000) === 0) return false;
  const c = (ir >>> 24) & 7;
  return c >= 2 && c <= 6;
}

function writesCV(ir: number): boolean {
  if (ir < 0) return false;
  const op = (ir >>> 16) & 15;
  return op === 8 || op === 9;
}

/** Registers an instruction reads (bit mask) and the one it writes (-1: none). */
function regUse(ir: number): { reads: number; writes: number } {
  if (ir >= 0) {
    const c = (ir & 0x40000000) === 0 ? 1 << (ir & 15) : 0;
    return { reads: (1 << ((ir >>> 20) & 15)) | c, writes: (ir >>> 24) & 15 };
  }
  if ((ir & 0x40000000) === 0) {
    const base = 1 << ((ir >>> 20) & 15);
    if ((ir & 0x20000000) === 0) return { reads: base, writes: (ir >>> 24) & 15 };
    return { reads: base | (1 << ((ir >>> 24) & 15)), writes: -1 };
  }
  const target = (ir & 0x20000000) === 0 ? 1 << (ir & 15) : 0;
  return { reads: target, writes: (ir & 0x10000000) !== 0 ? 15 : -1 };
}

// ---------------------------------------------------------------- translation

/** The instruction words of the block at pc0: up to an unconditional branch, at most LIMITS.maxBlock. */
function blockWords(mem: Int32Array, pc0: number, memWords: number): number[] {
  const irs: number[] = [];
  for (let pc = pc0; pc < memWords && irs.length < LIMITS.maxBlock; pc++) {
    const ir = mem[pc];
    irs.push(ir);
    if (isBranch(ir) && ((ir >>> 24) & 15) === 7) break; // an unconditional branch ends the block
  }
  return irs;
}

export interface Translation {
  body: number[];
  length: number;
  /** Its compiled function, once some CPU of the thread installed it (CodeSpace.install). */
  compiled?: { module: WasmModule; index: number };
}

/**
 * Translations shared by every CPU of this thread. A body depends only on the block's words, its
 * address and the memory layout, so machines running the same modules at the same addresses (a
 * cluster's nodes, repeated boots) translate each block once. Bodies are never modified.
 */
const shared = new Map<string, Translation>();

/**
 * Per RAM size, the block starts some CPU of this thread has translated (1): the entry count
 * that makes such a start hot drops to LIMITS.knownBlock, since a second machine running the
 * same modules finds the translation, compiled, in the shared cache. Only a threshold: the
 * cache still compares the block's words.
 */
const knownStarts = new Map<number, Uint8Array>();

export function knownBlockStarts(memBytes: number): Uint8Array {
  let known = knownStarts.get(memBytes);
  if (known === undefined) {
    known = new Uint8Array(memBytes >>> 2);
    knownStarts.set(memBytes, known);
  }
  return known;
}

/** translateBlock through the thread's shared cache. */
export function translateShared(
  mem: Int32Array,
  pc0: number,
  layout: MemoryLayout,
  displayStart: number,
  fixedReads: FixedReads = [],
): Translation {
  const irs = blockWords(mem, pc0, layout.memBytes >>> 2);
  const key = `${layout.memBytes},${displayStart},${fixedReads.join(';')},${pc0}:${irs.join(',')}`;
  const hit = shared.get(key);
  if (hit !== undefined) return hit;
  const t = translateWords(irs, pc0, layout, displayStart, fixedReads);
  if (shared.size >= LIMITS.sharedBlocks) shared.clear();
  shared.set(key, t);
  return t;
}

/** Translate the block at word index pc0; returns its function body and the words it covers. */
export function translateBlock(
  mem: Int32Array,
  pc0: number,
  layout: MemoryLayout,
  displayStart: number,
  fixedReads: FixedReads = [],
): Translation {
  return translateWords(blockWords(mem, pc0, layout.memBytes >>> 2), pc0, layout, displayStart, fixedReads);
}

function translateWords(
  irs: number[],
  pc0: number,
  layout: MemoryLayout,
  displayStart: number,
  fixedReads: FixedReads,
): Translation {
  const memBytes = layout.memBytes;
  const n = irs.length;
  // C/V liveness: live at every exit; an ADD/SUB whose C/V are overwritten unread skips them.
  const needCV = new Array<boolean>(n).fill(true);
  let live = true;
  let used = 0;
  let dirty = 0;
  let cvWritten = false;
  for (let k = n - 1; k >= 0; k--) {
    const ir = irs[k];
    if (writesCV(ir)) {
      needCV[k] = live;
      live = false;
      cvWritten = true;
    }
    if (readsCV(ir) || isBranch(ir)) live = true;
    const u = regUse(ir);
    used |= u.reads;
    if (u.writes >= 0) {
      used |= 1 << u.writes;
      dirty |= 1 << u.writes;
    }
  }

  const stateBase = memBytes;
  const codeMarkBase = layout.codeMarkBase;
  const b: number[] = [];
  const get = (l: number) => b.push(OP.localGet, l);
  const set = (l: number) => b.push(OP.localSet, l);
  const tee = (l: number) => b.push(OP.localTee, l);
  const i32 = (v: number) => {
    b.push(OP.i32Const);
    sleb(b, v);
  };
  const load = (offset: number, op: number = OP.i32Load) => {
    b.push(op, op === OP.i32Load ? 2 : 0);
    uleb(b, offset);
  };
  const store = (offset: number, op: number = OP.i32Store) => {
    b.push(op, op === OP.i32Store ? 2 : 0);
    uleb(b, offset);
  };
  const cell = (c: number) => stateBase + c * 4;
  // Structured control: `depth` counts the ifs open inside the exit block, so an exit knows how
  // far to branch out.
  let depth = 0;
  const open = (type: number) => {
    b.push(OP.if, type);
    depth++;
  };
  const close = () => {
    b.push(OP.end);
    depth--;
  };
  /**
   * Leave the block after its k-th instruction (pushPc leaves the next PC on the stack): every
   * exit branches to one shared epilogue that writes registers, flags and the count back.
   */
  const exit = (k: number, pushPc: () => void) => {
    pushPc();
    i32(k + 1);
    set(L.count);
    b.push(OP.br);
    uleb(b, depth);
  };
  const exitTo = (k: number, pc: number) => exit(k, () => i32(pc));
  const stopExit = (k: number, next: number) => {
    i32(0);
    load(cell(CELL.stop));
    open(OP.void);
    exitTo(k, next);
    close();
  };

  // Entry: registers and flags into locals.
  for (let r = 0; r < 16; r++) {
    if ((used & (1 << r)) === 0) continue;
    i32(0);
    load(stateBase + r * 4);
    set(r);
  }
  i32(0);
  load(cell(CELL.nz));
  set(L.nz);
  i32(0);
  load(cell(CELL.C));
  set(L.C);
  i32(0);
  load(cell(CELL.V));
  set(L.V);
  b.push(OP.block, OP.i32); // the exit block: its value is the next PC

  let ended = false;
  for (let k = 0; k < n; k++) {
    const ir = irs[k];
    const next = pc0 + k + 1;
    if (ir >= 0) {
      registerOp(ir, needCV[k]);
    } else if ((ir & 0x40000000) === 0) {
      memoryOp(ir, k, next);
    } else {
      const cond = (ir >>> 24) & 15;
      if (cond === 15) continue; // "never": not even the link is written
      const link = (ir & 0x10000000) !== 0;
      const taken = () => {
        if (link) {
          i32(next << 2);
          tee(15);
          set(L.nz);
        }
        if ((ir & 0x20000000) === 0)
          exit(k, () => {
            get(ir & 15);
            i32(2);
            b.push(OP.i32ShrU);
          });
        else exitTo(k, (next + ((ir << 8) >> 8)) >>> 0);
      };
      if (cond === 7) {
        taken();
        ended = true;
      } else {
        condition(cond);
        open(OP.void);
        taken();
        close();
      }
    }
  }
  if (!ended) exitTo(n - 1, pc0 + n);
  b.push(OP.end);
  // The epilogue: registers written, flags, the instruction count; the next PC is the result.
  set(L.pc);
  for (let r = 0; r < 16; r++) {
    if ((dirty & (1 << r)) === 0) continue;
    i32(0);
    get(r);
    store(stateBase + r * 4);
  }
  i32(0);
  get(L.nz);
  store(cell(CELL.nz));
  if (cvWritten) {
    i32(0);
    get(L.C);
    store(cell(CELL.C));
    i32(0);
    get(L.V);
    store(cell(CELL.V));
  }
  i32(0);
  i32(0);
  load(cell(CELL.instr));
  get(L.count);
  b.push(OP.i32Add);
  store(cell(CELL.instr));
  get(L.pc);
  return { body: b, length: n };

  function condition(cond: number): void {
    switch (cond & 7) {
      case 0: // N
        get(L.nz);
        i32(0);
        b.push(OP.i32LtS);
        break;
      case 1: // Z
        get(L.nz);
        b.push(OP.i32Eqz);
        break;
      case 2:
        get(L.C);
        break;
      case 3:
        get(L.V);
        break;
      case 4: // C | Z
        get(L.C);
        get(L.nz);
        b.push(OP.i32Eqz, OP.i32Or);
        break;
      case 5: // N ≠ V
        get(L.nz);
        i32(0);
        b.push(OP.i32LtS);
        get(L.V);
        b.push(OP.i32Xor);
        break;
      case 6: // (N ≠ V) | Z
        get(L.nz);
        i32(0);
        b.push(OP.i32LtS);
        get(L.V);
        b.push(OP.i32Xor);
        get(L.nz);
        b.push(OP.i32Eqz, OP.i32Or);
        break;
      default:
        i32(1);
    }
    if (cond >= 8) b.push(OP.i32Eqz);
  }

  function registerOp(ir: number, cvLive: boolean): void {
    const a = (ir >>> 24) & 15;
    const rb = (ir >>> 20) & 15;
    const q = (ir & 0x40000000) !== 0;
    const u = (ir & 0x20000000) !== 0;
    const v = (ir & 0x10000000) !== 0;
    const imm = v ? ir | 0xffff0000 : ir & 0xffff;
    const pushC = () => (q ? i32(imm) : get(ir & 15));
    const binary = (op: number) => {
      get(rb);
      pushC();
      b.push(op);
    };
    switch ((ir >>> 16) & 15) {
      case 0: // MOV
        if (!u) pushC();
        else if (q) i32(imm << 16);
        else if (v) {
          // The flags word: N Z C V in the top bits, the hardware's version tag 0xD0 below.
          get(L.nz);
          i32(0);
          b.push(OP.i32LtS);
          i32(3);
          b.push(OP.i32Shl);
          get(L.nz);
          b.push(OP.i32Eqz);
          i32(2);
          b.push(OP.i32Shl, OP.i32Or);
          get(L.C);
          i32(1);
          b.push(OP.i32Shl, OP.i32Or);
          get(L.V);
          b.push(OP.i32Or);
          i32(28);
          b.push(OP.i32Shl);
          i32(0xd0);
          b.push(OP.i32Or);
        } else {
          i32(0);
          load(cell(CELL.H));
        }
        break;
      case 1:
        binary(OP.i32Shl);
        break;
      case 2:
        binary(OP.i32ShrS);
        break;
      case 3:
        binary(OP.i32Rotr);
        break;
      case 4:
        binary(OP.i32And);
        break;
      case 5: // ANN
        get(rb);
        pushC();
        i32(-1);
        b.push(OP.i32Xor, OP.i32And);
        break;
      case 6:
        binary(OP.i32Or);
        break;
      case 7:
        binary(OP.i32Xor);
        break;
      case 8:
      case 9:
        addSub(ir, rb, pushC, u, cvLive);
        break;
      case 10: {
        // MUL: low word to a, high word to H (64-bit product).
        const ext = u ? OP.i64ExtendU : OP.i64ExtendS;
        binary(OP.i32Mul);
        set(L.r);
        i32(0);
        get(rb);
        b.push(ext);
        pushC();
        b.push(ext, OP.i64Mul, 0x42, 32, OP.i64ShrU, OP.i32WrapI64); // 0x42 32 = i64.const 32
        store(cell(CELL.H));
        get(L.r);
        break;
      }
      case 11:
        divide(ir, rb, pushC, u);
        break;
      default:
        // The floating-point unit: the interpreter's own functions.
        i32(ir);
        get(rb);
        pushC();
        b.push(OP.call, FN.complexOp);
    }
    tee(a);
    set(L.nz);
  }

  function addSub(ir: number, rb: number, pushC: () => void, u: boolean, cvLive: boolean): void {
    const add = ((ir >>> 16) & 15) === 8;
    const arith = add ? OP.i32Add : OP.i32Sub;
    if (!cvLive && !u) {
      get(rb);
      pushC();
      b.push(arith);
      return;
    }
    get(rb);
    set(L.x);
    pushC();
    set(L.y);
    get(L.x);
    get(L.y);
    b.push(arith);
    if (u) {
      get(L.C);
      b.push(arith);
    }
    set(L.r);
    // Carry/borrow out of bit 31 and overflow, from the operands' and the result's top bits.
    if (add) {
      // C = ((x & y) | ((x | y) & ~r)) >>> 31
      get(L.x);
      get(L.y);
      b.push(OP.i32And);
      get(L.x);
      get(L.y);
      b.push(OP.i32Or);
      get(L.r);
      i32(-1);
      b.push(OP.i32Xor, OP.i32And, OP.i32Or);
      i32(31);
      b.push(OP.i32ShrU);
      set(L.C);
      // V = ((r ^ y) & (r ^ x)) >>> 31
      get(L.r);
      get(L.y);
      b.push(OP.i32Xor);
      get(L.r);
      get(L.x);
      b.push(OP.i32Xor, OP.i32And);
    } else {
      // C = ((~x & y) | ((~x | y) & r)) >>> 31
      get(L.x);
      i32(-1);
      b.push(OP.i32Xor);
      tee(L.w);
      get(L.y);
      b.push(OP.i32And);
      get(L.w);
      get(L.y);
      b.push(OP.i32Or);
      get(L.r);
      b.push(OP.i32And, OP.i32Or);
      i32(31);
      b.push(OP.i32ShrU);
      set(L.C);
      // V = ((x ^ y) & (r ^ x)) >>> 31
      get(L.x);
      get(L.y);
      b.push(OP.i32Xor);
      get(L.r);
      get(L.x);
      b.push(OP.i32Xor, OP.i32And);
    }
    i32(31);
    b.push(OP.i32ShrU);
    set(L.V);
    get(L.r);
  }

  function divide(ir: number, rb: number, pushC: () => void, u: boolean): void {
    // Positive divisors inline (floor division, remainder to H); others through the shared helper.
    pushC();
    tee(L.y);
    i32(0);
    b.push(OP.i32GtS);
    open(OP.i32);
    get(rb);
    tee(L.x);
    get(L.y);
    b.push(u ? OP.i32DivU : OP.i32DivS);
    set(L.r);
    get(L.x);
    get(L.y);
    b.push(u ? OP.i32RemU : OP.i32RemS);
    set(L.w);
    if (!u) {
      // Truncating division → floor: a negative remainder moves the quotient down by one.
      get(L.w);
      i32(0);
      b.push(OP.i32LtS);
      open(OP.void);
      get(L.r);
      i32(1);
      b.push(OP.i32Sub);
      set(L.r);
      get(L.w);
      get(L.y);
      b.push(OP.i32Add);
      set(L.w);
      close();
    }
    i32(0);
    get(L.w);
    store(cell(CELL.H));
    get(L.r);
    b.push(OP.else);
    i32(ir);
    get(rb);
    get(L.y);
    b.push(OP.call, FN.complexOp);
    close();
  }

  function memoryOp(ir: number, k: number, next: number): void {
    const a = (ir >>> 24) & 15;
    const byte = (ir & 0x10000000) !== 0;
    get((ir >>> 20) & 15);
    i32((ir << 12) >> 12);
    b.push(OP.i32Add);
    tee(L.ad);
    i32(memBytes);
    b.push(OP.i32LtU);
    if ((ir & 0x20000000) === 0) {
      // Load: RAM inline; a device read goes through the bus and may stop the CPU.
      open(OP.i32);
      get(L.ad);
      if (byte) load(0, OP.i32Load8u);
      else {
        i32(-4);
        b.push(OP.i32And);
        load(0);
      }
      b.push(OP.else);
      for (const [address, value] of fixedReads) {
        get(L.ad);
        i32(address);
        b.push(OP.i32Eq);
        open(OP.i32);
        i32(value);
        b.push(OP.else);
      }
      get(L.ad);
      i32(k + 1);
      b.push(OP.call, FN.ioRead);
      for (let f = 0; f < fixedReads.length; f++) close();
      if (byte) {
        get(L.ad);
        i32(3);
        b.push(OP.i32And);
        i32(3);
        b.push(OP.i32Shl, OP.i32ShrU);
        i32(0xff);
        b.push(OP.i32And);
      }
      tee(a);
      set(L.nz);
      stopExit(k, next);
      get(a);
      close();
      tee(a);
      set(L.nz);
      return;
    }
    // Store: RAM inline (bumping the frame counter in the display, invalidating translated code).
    open(OP.void);
    get(L.ad);
    if (byte) {
      get(a);
      store(0, OP.i32Store8);
    } else {
      i32(-4);
      b.push(OP.i32And);
      get(a);
      store(0);
    }
    get(L.ad);
    i32(displayStart);
    b.push(OP.i32GeU);
    open(OP.void);
    i32(0);
    i32(0);
    load(cell(CELL.fb));
    i32(1);
    b.push(OP.i32Add);
    store(cell(CELL.fb));
    close();
    get(L.ad);
    i32(2);
    b.push(OP.i32ShrU);
    tee(L.w);
    load(codeMarkBase, OP.i32Load8u);
    open(OP.void);
    get(L.w);
    b.push(OP.call, FN.invalidate);
    exitTo(k, next);
    close();
    b.push(OP.else);
    get(L.ad);
    get(a);
    if (byte) {
      i32(0xff);
      b.push(OP.i32And);
    }
    i32(k + 1);
    b.push(OP.call, FN.ioWrite);
    stopExit(k, next);
    close();
  }
}

/** DIV, FAD, FSB, FML, FDV for translated code; returns the result and sets cpu.H for DIV. */
export function complexOp(cpu: { H: number }, ir: number, b: number, c: number): number {
  const u = (ir & 0x20000000) !== 0;
  const v = (ir & 0x10000000) !== 0;
  switch ((ir >>> 16) & 15) {
    case 11: {
      if (c > 0) {
        if (!u) {
          let q = (b / c) | 0;
          let rem = b - Math.imul(q, c);
          if (rem < 0) {
            q = (q - 1) | 0;
            rem = (rem + c) | 0;
          }
          cpu.H = rem;
          return q;
        }
        const bu = b >>> 0;
        const q = Math.floor(bu / c);
        cpu.H = (bu - q * c) | 0;
        return q | 0;
      }
      idiv(b, c, !u);
      cpu.H = idivResult[1];
      return idivResult[0];
    }
    case 12:
      return fpAdd(b, c, u, v);
    case 13:
      return fpAdd(b, c ^ 0x80000000, u, v);
    case 14:
      return fpMul(b, c);
    default:
      return fpDiv(b, c);
  }
}
