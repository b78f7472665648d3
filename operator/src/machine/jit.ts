// A RISC5 → WebAssembly translator. A superblock (straight-line code up to an unconditional
// branch, conditional branches as side exits, at most LIMITS.maxBlock instructions) becomes one
// wasm function that runs those instructions against the machine's RAM, which lives in the same
// WebAssembly.Memory as everything the CPU owns (layout: jit-layout.ts). Registers sit in wasm locals for
// the whole block, flags too, and C/V are computed only where a later instruction or an exit can
// observe them. Hot blocks are compiled several to a module, placed in one function table, and a
// small wasm dispatcher calls block after block through that table; a block jumps on into the
// next itself, and where a tier hook compiles the modules (Node: wasm-tiering.ts) neighbouring
// blocks share one function, so a jump between them keeps the registers in locals (jit-group.ts
// blocksBytes).
//
// Why wasm and not generated JavaScript: V8 must warm each JavaScript function up through its
// tiers and may throw optimised code away when a path it never saw runs; a translated block paid
// about 1 ms of compiler time that way, more than a short compile job ever repays. A wasm block
// costs about 0.06 ms, has no speculation to lose, and calls between blocks stay inside wasm.
//
// Semantics are the interpreter's (cpu.ts), instruction for instruction: a block leaves after an
// I/O access that asks the CPU to stop, and after a store into translated code (Oberon loads
// modules by storing code), which invalidates the translations of that code's page.
//
// The parts: jit-layout.ts (limits, the memory layout, the contracts), jit-translate.ts (a block
// → its wasm code), jit-group.ts (blocks → a module, in groups), jit-wasm.ts (wasm's bytes);
// here the code space of a CPU and the translations shared by the CPUs of a thread.

import { fpAdd, fpDiv, fpMul, idiv, idivResult } from './fpu.ts';
import { blockWords } from './jit-decode.ts';
import { blocksBytes, decodeBlock, GROUP_BLOCKS, groupGlobals } from './jit-group.ts';
import {
  CELL,
  type Dispatch,
  type FixedReads,
  type JitImports,
  LIMITS,
  type MemoryLayout,
  memoryLayout,
  type Translation,
  WASM_PAGE,
  type WasmModule,
} from './jit-layout.ts';
import { translateWords } from './jit-translate.ts';
import { dispatcherBytes } from './jit-wasm.ts';

// The translator's definitions are part of its interface (cpu.ts, jit-hints.ts, tests).
export * from './jit-layout.ts';

// The project's lib (ES2024, no DOM) does not declare the WebAssembly global; the part used here.
interface WasmGlobal {
  value: number;
}
interface WasmTable {
  readonly length: number;
  grow(delta: number): number;
  set(index: number, value: unknown): void;
}
type WasmInstance = { exports: Record<string, unknown> };
const WA = (
  globalThis as unknown as {
    WebAssembly: {
      Memory: new (d: { initial: number; maximum: number }) => { readonly buffer: ArrayBuffer };
      Table: new (d: { element: 'anyfunc'; initial: number }) => WasmTable;
      Module: new (bytes: Uint8Array) => WasmModule;
      Instance: new (module: WasmModule, imports: object) => WasmInstance;
      Global: new (d: { value: 'i32'; mutable: boolean }, v: number) => WasmGlobal;
    };
  }
).WebAssembly;

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
  /** Free table slots by their residue modulo GROUP_BLOCKS (allocSlot); slot 0 means "no block". */
  private readonly freeSlots: number[][] = Array.from({ length: GROUP_BLOCKS }, () => []);
  private rows = 0;
  /** This CPU's instance of each shared module it took blocks from, with each group's validity mask. */
  private readonly instances = new Map<
    WasmModule,
    { exports: WasmInstance['exports']; valid: WasmGlobal[] }
  >();
  /** The validity mask and bit of the block in each table slot (jit-group.ts blocksBytes). */
  private readonly slotValid: ({ v: WasmGlobal; bit: number } | undefined)[] = [];

  constructor(memBytes: number, helpers: JitImports) {
    this.layout = memoryLayout(memBytes);
    const pages = Math.ceil((this.layout.slotBase + memBytes) / WASM_PAGE);
    const memory = new WA.Memory({ initial: pages, maximum: pages });
    this.buffer = memory.buffer;
    this.table = new WA.Table({ element: 'anyfunc', initial: 256 });
    this.imports = { j: { m: memory, t: this.table, ...helpers } };
    const dispatcher = new WA.Instance(new WA.Module(dispatcherBytes(this.layout)), this.imports);
    const run = dispatcher.exports.run as Dispatch;
    const instr = new Int32Array(this.buffer, memBytes + CELL.instr * 4, 1);
    this.dispatch = (pc, budget) => {
      const next = run(pc, budget);
      ranTranslated(instr[0]); // the CPU zeroes the cell before each dispatch
      return next;
    };
  }

  /**
   * Put translations into this CPU's table; returns the slot of each. Those not compiled
   * yet are compiled together in one module. A compiled module is shared by every CPU of the thread
   * (each instantiates it against its own memory), so V8's optimised code for a block, once it
   * has tiered up, serves every machine running that code.
   */
  install(blocks: Translation[]): number[] {
    const fresh = blocks.filter((t) => t.compiled?.generation !== generation);
    if (fresh.length > 0) {
      // Neighbouring blocks share a function (jit-group.ts blocksBytes): a jump inside a group
      // keeps the registers in locals, and a procedure's blocks lie side by side. Only where a
      // tier hook compiles the modules (Node: wasm-tiering.ts): without it (the browser lab) V8
      // tiers grouped functions up to its optimising compiler early in a fresh page, and those
      // compiles cost more than the groups save, so each block stands alone there.
      const size = compileTier === null ? 1 : GROUP_BLOCKS;
      const ordered =
        size === 1
          ? fresh
          : fresh
              .map((t) => ({ t, start: decodeBlock(t.body).start }))
              .sort((a, b) => a.start - b.start)
              .map(({ t }) => t);
      const groups: Translation[][] = [];
      for (let i = 0; i < ordered.length; i += size) groups.push(ordered.slice(i, i + size));
      const globalOf = groupGlobals(groups.map((g) => g.length));
      const globals = globalOf.filter((v) => v >= 0).length;
      const bytes = blocksBytes(
        groups.map((g) => g.map((t) => t.body)),
        this.layout,
        generation,
      );
      const compile = () => new WA.Module(bytes);
      const module = compileTier === null ? compile() : compileTier(compile, generation !== 0);
      groups.forEach((g, group) => {
        g.forEach((t, index) => {
          t.compiled = { module, group, index, global: globalOf[group], globals, generation };
        });
      });
    }
    return blocks.map((t) => {
      const c = t.compiled as NonNullable<Translation['compiled']>;
      let instance = this.instances.get(c.module);
      if (instance === undefined) {
        const valid: WasmGlobal[] = [];
        const imports: Record<string, unknown> = { ...this.imports.j };
        for (let g = 0; g < c.globals; g++) {
          const v = new WA.Global({ value: 'i32', mutable: true }, 0);
          valid.push(v);
          imports[`v${g}`] = v;
        }
        instance = { exports: new WA.Instance(c.module, { j: imports }).exports, valid };
        this.instances.set(c.module, instance);
      }
      const slot = this.allocSlot(c.global >= 0 ? c.index : -1);
      this.table.set(slot, instance.exports[String(c.group)]);
      if (c.global >= 0) {
        const v = instance.valid[c.global];
        v.value |= 1 << c.index;
        this.slotValid[slot] = { v, bit: 1 << c.index };
      }
      return slot;
    });
  }

  free(slot: number): void {
    this.table.set(slot, null);
    const s = this.slotValid[slot];
    if (s !== undefined) {
      s.v.value &= ~s.bit;
      this.slotValid[slot] = undefined;
    }
    this.freeSlots[slot % GROUP_BLOCKS].push(slot);
  }

  /**
   * A free table slot; for the block of index `index` in a group, one whose residue modulo
   * GROUP_BLOCKS is that index (the group reads where to start from the slot it is called
   * with), for a lone block (-1) any. Free slots are kept by residue; the table grows by whole
   * rows of GROUP_BLOCKS.
   */
  private allocSlot(index: number): number {
    if (index < 0) {
      for (const free of this.freeSlots) {
        const slot = free.pop();
        if (slot !== undefined) return slot;
      }
    } else {
      const slot = this.freeSlots[index].pop();
      if (slot !== undefined) return slot;
    }
    const row = this.rows++ * GROUP_BLOCKS;
    if (row + GROUP_BLOCKS > this.table.length) this.table.grow(this.table.length);
    // Pushed last to first, so a row's slots are handed out in order.
    for (let i = GROUP_BLOCKS - 1; i >= 0; i--) if (row + i !== 0) this.freeSlots[i].push(row + i);
    return this.allocSlot(index);
  }
}

/**
 * How this thread's modules are compiled. V8 runs a new wasm function in its baseline compiler
 * and recompiles it with its optimising one once the function has used up a budget. In a fresh
 * process those optimising compiles cost more CPU than they save in a first compile of the
 * compiler, but optimised blocks run a warm compile about a third faster. So a thread that has
 * run LIMITS.longLived instructions in translated code starts generation 1: the hook (set by
 * wasm-tiering.ts, Node only) compiles generation 0's modules to stay in the baseline code and
 * generation 1's to tier up soon, and every translation is compiled again in a module of
 * generation 1 when a CPU next installs it; a CPU's blocks are compiled again at its next run()
 * (cpu-blocks.ts recompile).
 */
export type CompileTier = <M>(compile: () => M, longLived: boolean) => M;
let generation = 0;
let translatedRun = 0;
let compileTier: CompileTier | null = null;

/** Translated code ran n instructions: a thread past LIMITS.longLived compiles for the long run. */
function ranTranslated(n: number): void {
  translatedRun += n;
  if (generation === 0 && compileTier !== null && translatedRun >= LIMITS.longLived) generation = 1;
}

/** The tier this thread compiles for now: 0 fresh, 1 long-lived (a CPU's blocks catch up: cpu-blocks.ts). */
export function compileGeneration(): number {
  return generation;
}

/**
 * The entry count that makes a block start hot, for a CPU made now: lower once the thread is
 * long-lived (LIMITS.longLivedHotBlock). Counts stay per CPU: a count over the thread's CPUs
 * would make ever rarer starts hot, machine after machine, each a module to compile and
 * instantiate in every later machine (measured: a warm compile of the compiler 35 % slower).
 */
export function defaultHotBlock(): number {
  return translatedRun >= LIMITS.longLived ? LIMITS.longLivedHotBlock : LIMITS.hotBlock;
}

/** Compiles each module of blocks from now on (null: `new WebAssembly.Module`, lone blocks). */
export function setCompileTier(hook: CompileTier | null): void {
  compileTier = hook;
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

let made = 0;

/** How many translations this thread has made itself (not taken from an earlier process's). */
export function translationsMade(): number {
  return made;
}

/** This thread's shared translations by key (RAM size, display, fixed reads, address, words). */
export function sharedTranslations(): ReadonlyMap<string, Translation> {
  return shared;
}

/**
 * A translation an earlier process made under the same key with this translator's code
 * (jit-hints.ts keeps them, versioned by source-version.ts): translateShared returns it only where
 * RAM holds exactly the key's words at that address, as it does for the thread's own.
 */
export function seedTranslation(key: string, t: Translation): void {
  if (shared.has(key) || shared.size >= LIMITS.sharedBlocks) return;
  shared.set(key, { body: t.body, length: t.length });
}

/** Forget the thread's translations (tests: the next CPU starts as in a new process). */
export function forgetTranslations(): void {
  forgetShared();
  generation = 0;
  translatedRun = 0;
}

/**
 * The translation last found at each address, by the rest of the key (RAM size, display, fixed
 * reads), with its words: a new machine installs each of its few hundred known blocks again, and
 * comparing RAM with the words is cheaper than building the key's string (a steady warm compile
 * spent 5 % of its time there).
 */
const lastAt = new Map<string, Map<number, { words: Int32Array; t: Translation }>>();

/** translateBlock through the thread's shared cache. */
export function translateShared(
  mem: Int32Array,
  pc0: number,
  layout: MemoryLayout,
  displayStart: number,
  fixedReads: FixedReads = [],
): Translation {
  const context = `${layout.memBytes},${displayStart},${fixedReads.join(';')}`;
  const last = lastAt.get(context)?.get(pc0);
  // The same words make the same block: where a block ends depends on its words alone.
  if (last !== undefined && sameWords(mem, pc0, last.words)) return last.t;
  const irs = blockWords(mem, pc0, layout.memBytes >>> 2);
  const key = `${context},${pc0}:${irs.join(',')}`;
  let t = shared.get(key);
  if (t === undefined) {
    t = translateWords(irs, pc0, layout, displayStart, fixedReads);
    made++;
    if (shared.size >= LIMITS.sharedBlocks) forgetShared();
    shared.set(key, t);
  }
  let here = lastAt.get(context); // after forgetShared, if the cache just started over
  if (here === undefined) {
    here = new Map();
    lastAt.set(context, here);
  }
  here.set(pc0, { words: Int32Array.from(irs), t });
  return t;
}

function sameWords(mem: Int32Array, pc0: number, words: Int32Array): boolean {
  if (pc0 + words.length > mem.length) return false;
  for (let i = 0; i < words.length; i++) if (mem[pc0 + i] !== words[i]) return false;
  return true;
}

function forgetShared(): void {
  shared.clear();
  lastAt.clear();
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
