// Translated blocks → a wasm module (jit.ts installs it): each block's stored form (what the
// module needs to know of it, and its function standing alone), and groups of neighbouring
// blocks compiled as one function whose jumps between its blocks keep the registers in locals.
// The bytes of wasm are jit-wasm.ts's; a block's own code is jit-translate.ts's.

import { CELL, LIMITS, type MemoryLayout } from './jit-layout.ts';
import {
  emit,
  FN,
  funcType,
  importEntry,
  L,
  LOCALS,
  MAGIC,
  MEMORY_IMPORT,
  name,
  OP,
  section,
  TABLE_IMPORT,
  uleb,
  ulebBytes,
} from './jit-wasm.ts';

/** What the module needs to know of a translated block (jit-translate.ts), beside its code. */
export interface BlockInfo {
  /** Its first word. */
  start: number;
  /** Registers it reads or writes (bit r), and those it writes. */
  used: number;
  dirty: number;
  /** Whether it writes C or V. */
  cv: boolean;
  /** The PCs it may leave to that are known when it is translated (branch targets, fall-through). */
  targets: number[];
}

/**
 * A translation's stored form (jit-layout.ts Translation.body, kept in the thread's cache and in
 * hint files): the BlockInfo and where the block's code lies as LEB128 numbers, then the whole
 * function of the block standing alone (a thread without a tier hook copies it as it is), inside
 * which lies the block's code, an exit block whose value is the next PC (a group takes that).
 */
export function encodeBlock(info: BlockInfo, code: number[], layout: MemoryLayout): Uint8Array {
  const [before, , after] = groupParts([{ ...info, code }], -1, layout);
  const head: number[] = [];
  uleb(head, info.start);
  uleb(head, info.used);
  uleb(head, info.dirty);
  head.push(info.cv ? 1 : 0);
  uleb(head, info.targets.length);
  for (const t of info.targets) uleb(head, t);
  uleb(head, before.length);
  uleb(head, code.length);
  const out = new Uint8Array(head.length + before.length + code.length + after.length);
  out.set(head);
  out.set(before, head.length);
  out.set(code, head.length + before.length);
  out.set(after, head.length + before.length + code.length);
  return out;
}

/** What a stored translation holds, with the offsets of its lone function and of its code. */
export interface StoredBlock extends BlockInfo {
  fnAt: number;
  codeAt: number;
  codeEnd: number;
}

/** The parts of a stored translation (encodeBlock); throws on one that is not whole. */
export function decodeBlock(body: ArrayLike<number>): StoredBlock {
  let at = 0;
  const next = (): number => {
    let v = 0;
    let shift = 0;
    for (;;) {
      if (at >= body.length) throw new Error('a translation cut short');
      const x = body[at++];
      v += (x & 0x7f) * 2 ** shift;
      if ((x & 0x80) === 0) return v >>> 0;
      shift += 7;
      if (shift > 28) throw new Error('a translation with a number out of range');
    }
  };
  const start = next();
  const used = next();
  const dirty = next();
  const cv = next() !== 0;
  const count = next();
  if (count > LIMITS.maxBlock + 1) throw new Error('a translation with more exits than instructions');
  const targets: number[] = [];
  for (let i = 0; i < count; i++) targets.push(next());
  const codeOffset = next();
  const codeLength = next();
  const fnAt = at;
  const codeAt = fnAt + codeOffset;
  const codeEnd = codeAt + codeLength;
  if (codeEnd > body.length) throw new Error('a translation cut short');
  return { start, used, dirty, cv, targets, fnAt, codeAt, codeEnd };
}

/** Blocks per group: one bit each in the group's validity mask (an i32). */
export const GROUP_BLOCKS = 32;

/**
 * A module of translated blocks, in groups of up to GROUP_BLOCKS (`groups` gives each group's
 * stored translations). A group is one function, exported as its index and put by
 * CodeSpace.install in the table slot of each of its blocks; it is called with that slot, and a
 * block's slot is its index in the group modulo GROUP_BLOCKS (CodeSpace.install allocates them
 * so), which says where to start without a lookup. Its blocks share the registers' locals: a
 * block that leaves to another block of the group runs it with a branch, the registers staying
 * in locals, where a jump to any other block writes them back to memory and calls the next
 * block through the table (a tail call) or returns to the dispatcher. A jump inside the group
 * checks what the dispatcher checks (no stop asked for, the budget not spent) and that the
 * target is still installed in this CPU: global g (imported, one per group and instance) has bit
 * i set while block i is (CodeSpace.install sets it, free clears it), so a block dropped after a
 * store into its words is never run from the group.
 */
export function blocksBytes(groups: ArrayLike<number>[][], layout: MemoryLayout, generation = 0): Uint8Array {
  const out = [...MAGIC];
  // A custom section naming the generation (jit.ts): V8 hands out an earlier compiled module for
  // the same bytes, and one of another generation was compiled for another tier.
  if (generation !== 0) section(out, 0, [1, 0x67, generation & 0x7f]);
  // Types: 0 a group (the slot it was called through) → the next PC; 1 ioRead; 2 ioWrite;
  // 3 invalidate; 4 complexOp.
  section(out, 1, [
    5,
    ...funcType(1, true),
    ...funcType(2, true),
    ...funcType(3, false),
    ...funcType(1, false),
    ...funcType(3, true),
  ]);
  const globalOf = groupGlobals(groups.map((g) => g.length));
  const imports: number[] = [];
  uleb(imports, 6 + globalOf.filter((v) => v >= 0).length);
  importEntry(imports, 'ioRead', [0x00, 1]);
  importEntry(imports, 'ioWrite', [0x00, 2]);
  importEntry(imports, 'invalidate', [0x00, 3]);
  importEntry(imports, 'complexOp', [0x00, 4]);
  importEntry(imports, 'm', MEMORY_IMPORT);
  importEntry(imports, 't', TABLE_IMPORT);
  for (let g = 0; g < globalOf.length; g++)
    if (globalOf[g] >= 0) importEntry(imports, `v${globalOf[g]}`, [0x03, OP.i32, 0x01]);
  section(out, 2, imports);
  const fns: number[] = [];
  uleb(fns, groups.length);
  for (let i = 0; i < groups.length; i++) fns.push(0);
  section(out, 3, fns);
  const exports: number[] = [];
  uleb(exports, groups.length);
  groups.forEach((_, i) => {
    name(exports, String(i));
    exports.push(0x00);
    uleb(exports, FN.count + i);
  });
  section(out, 7, exports);
  // The code section holds nearly all the bytes: the blocks' code is copied in natively, between
  // the glue written here.
  const functions = groups.map((g, i) => {
    if (g.length === 1) return [slice(g[0], decodeBlock(g[0]).fnAt, g[0].length)];
    const blocks = g.map((body) => {
      const d = decodeBlock(body);
      return { ...d, code: slice(body, d.codeAt, d.codeEnd) };
    });
    return groupParts(blocks, globalOf[i], layout);
  });
  const head: number[] = [];
  uleb(head, functions.length);
  let sectionLength = head.length;
  const sizes = functions.map((parts) => {
    const size = parts.reduce((sum, p) => sum + p.length, 0);
    const s = ulebBytes(size);
    sectionLength += s.length + size;
    return s;
  });
  out.push(10);
  uleb(out, sectionLength);
  for (const x of head) out.push(x);
  const bytes = new Uint8Array(out.length + sectionLength - head.length);
  bytes.set(out);
  let at = out.length;
  functions.forEach((parts, i) => {
    bytes.set(sizes[i], at);
    at += sizes[i].length;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.length;
    }
  });
  return bytes;
}

/**
 * The validity mask of each group of these sizes: the index of its imported global (v0, v1, …),
 * or -1 for a lone block, which jumps only to itself and checks its slot instead.
 */
export function groupGlobals(sizes: number[]): number[] {
  let next = 0;
  return sizes.map((n) => (n > 1 ? next++ : -1));
}

/** The function of one group, in pieces: glue (number arrays) and the blocks' code (views). */
function groupParts(
  blocks: (BlockInfo & { code: ArrayLike<number> })[],
  global: number,
  layout: MemoryLayout,
): ArrayLike<number>[] {
  const n = blocks.length;
  const indexOf = new Map<number, number>();
  blocks.forEach((blk, i) => {
    if (!indexOf.has(blk.start)) indexOf.set(blk.start, i);
  });
  let used = 0;
  let dirty = 0;
  let cv = false;
  for (const blk of blocks) {
    used |= blk.used;
    dirty |= blk.dirty;
    cv ||= blk.cv;
  }
  const stateBase = layout.memBytes;
  const cell = (c: number) => stateBase + c * 4;
  // The glue goes into b; each block's code is copied in later at the place recorded for it.
  const b: number[] = [1, LOCALS, OP.i32]; // one local declaration: LOCALS locals of type i32
  const codeAt: { at: number; code: ArrayLike<number> }[] = [];
  const { get, set, tee, i32, load, store, br } = emit(b);
  /** On the stack: no stop asked for and the budget not spent (L.r: the count so far). */
  const mayGoOn = () => {
    i32(0);
    load(cell(CELL.stop));
    b.push(OP.i32Eqz);
    get(L.r);
    i32(0);
    load(cell(CELL.budget));
    b.push(OP.i32LtS, OP.i32And);
  };

  // Entry: the registers and flags into locals, then (in a group) to the block whose slot the
  // group was called through.
  for (let r = 0; r < 16; r++) {
    if ((used & (1 << r)) === 0) continue;
    i32(0);
    load(stateBase + r * 4);
    set(r);
  }
  for (const [c, l] of [
    [CELL.nz, L.nz],
    [CELL.C, L.C],
    [CELL.V, L.V],
  ]) {
    i32(0);
    load(cell(c));
    set(l);
  }
  // A lone block (jit.ts: every block where no tier hook keeps a fresh thread's groups in V8's
  // baseline code, as in the browser) has no ladder.
  const lone = n === 1;
  if (!lone) {
    // $leave: out of the group, L.pc holds the next PC. A lone block falls through to the end
    // instead (one merge of control flow less, which costs V8's baseline code moves of locals).
    b.push(OP.block, OP.void);
    b.push(OP.localGet, 0); // the parameter: the slot
    i32(GROUP_BLOCKS - 1);
    b.push(OP.i32And);
    set(L.next);
    b.push(OP.loop, OP.void); // $top: run block L.next
    for (let i = 0; i < n; i++) b.push(OP.block, OP.void);
    get(L.next);
    b.push(OP.brTable);
    uleb(b, n);
    for (let i = 0; i < n; i++) uleb(b, i);
    uleb(b, 0); // the default is never taken: L.next < n here
  }
  blocks.forEach((blk, i) => {
    // Labels around block i's code: the ladder's blocks i+1..n-1, $top and $leave (none for a
    // lone block).
    if (!lone) b.push(OP.end); // the end of block i's label: its code follows
    const ladder = lone ? 0 : n - i;
    const selfLoop = blk.targets.includes(blk.start);
    // A block that leaves to itself branches to its own start: a call would enter the function
    // again, and V8's baseline code fills a function's locals with zeros on every entry.
    if (selfLoop) b.push(OP.loop, OP.void);
    const inLoop = selfLoop ? 1 : 0;
    codeAt.push({ at: b.length, code: blk.code });
    set(L.pc);
    // The instruction count, as the dispatcher keeps it (devices read it).
    i32(0);
    i32(0);
    load(cell(CELL.instr));
    get(L.count);
    b.push(OP.i32Add);
    tee(L.r);
    store(cell(CELL.instr));
    for (const t of blk.targets) {
      const j = indexOf.get(t);
      if (j === undefined) continue;
      get(L.pc);
      i32(t);
      b.push(OP.i32Eq);
      mayGoOn();
      b.push(OP.i32And);
      // Still installed in this CPU: its bit in the group's mask, or a lone block's slot.
      if (lone) {
        i32(t << 2);
        load(layout.slotBase);
      } else {
        b.push(OP.globalGet);
        uleb(b, global);
        i32(1 << j);
        b.push(OP.i32And);
      }
      b.push(OP.i32Eqz, OP.i32Eqz, OP.i32And, OP.if, OP.void);
      if (j === i && selfLoop) br(1);
      else {
        i32(j);
        set(L.next);
        br(inLoop + ladder); // to $top
      }
      b.push(OP.end);
    }
    if (!lone) br(inLoop + ladder); // to $leave
    if (selfLoop) b.push(OP.end);
  });
  if (!lone) b.push(OP.end, OP.end); // $top, $leave
  // Out of the group: the registers it wrote and the flags back to memory, then on to the next
  // block through the table on the dispatcher's conditions (a tail call: no return to the
  // dispatcher per block run, and each block's jump a branch site of its own for the host's
  // predictor), or back to the dispatcher.
  for (let r = 0; r < 16; r++) {
    if ((dirty & (1 << r)) === 0) continue;
    i32(0);
    get(r);
    store(stateBase + r * 4);
  }
  i32(0);
  get(L.nz);
  store(cell(CELL.nz));
  if (cv) {
    i32(0);
    get(L.C);
    store(cell(CELL.C));
    i32(0);
    get(L.V);
    store(cell(CELL.V));
  }
  mayGoOn();
  get(L.pc);
  i32(layout.memBytes >>> 2);
  b.push(OP.i32LtU, OP.i32And, OP.if, OP.void);
  get(L.pc);
  i32(2);
  b.push(OP.i32Shl);
  load(layout.slotBase);
  tee(L.w);
  b.push(OP.if, OP.void);
  get(L.w);
  get(L.w);
  b.push(OP.returnCallIndirect, 0, 0);
  b.push(OP.end, OP.end);
  get(L.pc);
  b.push(OP.end);
  const parts: ArrayLike<number>[] = [];
  let from = 0;
  for (const { at, code } of codeAt) {
    parts.push(b.slice(from, at), code);
    from = at;
  }
  parts.push(b.slice(from));
  return parts;
}

function slice(body: ArrayLike<number>, from: number, to: number): ArrayLike<number> {
  return body instanceof Uint8Array ? body.subarray(from, to) : Array.prototype.slice.call(body, from, to);
}
