// The translator's shared definitions (jit.ts is the translator: it says how the parts fit):
// its limits, the layout of the machine's wasm memory, and the contracts between the CPU,
// translated code and the translation cache. It imports nothing, so every part can import it.

export const LIMITS = {
  maxBlock: 64, // instructions per translated block (bounds module size and run(n) overshoot)
  pageShift: 8, // invalidation granularity: 256 words (1 KiB) of code
  hotBlock: 1000, // translate a block on its 1,000th entry: lower thresholds translate code that never repays its ~0.06 ms (bench/machine)
  longLivedHotBlock: 250, // ...on its 250th in a CPU made once the thread is long-lived (below): its translations serve every later machine of the thread, so code each enters a few hundred times repays them
  knownBlock: 16, // ...or on its 16th where another CPU of the thread translated one: most likely the same code, already compiled
  batch: 16, // hot blocks compiled together in one wasm module (a module has a fixed cost of its own)
  batchDelay: 250_000, // ...or once the oldest has waited this many instructions (10 ms at 25 MHz), or at the end of run()
  sharedBlocks: 8192, // translations kept for every CPU of this thread (~1 KB each); the cache starts over when full
  longLived: 100_000_000, // instructions a thread runs in translated code before its modules are compiled to tier up early (jit.ts setCompileTier): 4 s of machine time, about twice a boot and a compile of the compiler, so a fresh process's first compile stays below
} as const;

/**
 * The machine's memory: RAM, then the registers and the cells that carry state between
 * JavaScript and translated code, then one code-mark byte per RAM word, then the table slot of
 * the block starting at each RAM word (0: none). Cell offsets are words from RAM's end.
 */
export const CELL = { nz: 16, C: 17, V: 18, H: 19, instr: 20, stop: 21, fb: 22, budget: 23 } as const;
const CELLS_BYTES = 128; // 16 registers + the cells above, rounded up
export const WASM_PAGE = 65536;

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

/** A compiled module of translated blocks (a WebAssembly.Module); its instances' exports are the block functions. */
export type WasmModule = object;

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
 * A translated block: its stored form (jit-group.ts encodeBlock: what the module needs to know of
 * it, then its wasm code) and the words it covers.
 */
export interface Translation {
  body: ArrayLike<number>;
  length: number;
  /**
   * Where it was compiled, once some CPU of the thread installed it (CodeSpace.install): its
   * group (jit-group.ts blocksBytes) and index there, the group's validity mask (-1: a lone
   * block) and how many the module imports.
   */
  compiled?: {
    module: WasmModule;
    group: number;
    index: number;
    global: number;
    globals: number;
    generation: number;
  };
}
