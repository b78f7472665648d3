// One CPU's translated blocks (cpu.ts runs them): which RAM words they cover, the table slot of
// each block start, how often each untranslated start ran (a start becomes hot and is
// translated), the hot starts waiting to be compiled together, and what a store into translated
// code drops. The translator itself is jit.ts; the hints of earlier processes jit-hint-source.ts.

import {
  type CodeSpace,
  compileGeneration,
  type FixedReads,
  LIMITS as JIT_LIMITS,
  knownBlockStarts,
  type Translation,
  translateShared,
} from './jit.ts';
import { HINTED, type HintSource, hintSource } from './jit-hint-source.ts';

/** What the blocks read of their CPU when they translate: both may change while it runs. */
export interface BlockOwner {
  readonly displayStart: number;
  readonly bus: { readonly fixedReads?: FixedReads };
}

export class CpuBlocks {
  /** 1 for every RAM word covered by a translated block (stores there invalidate it). */
  readonly codeMark: Uint8Array;
  /** The table slot of the translated block starting at each RAM word (0: none). */
  readonly slotOf: Int32Array;
  /** How often each block start ran in the interpreter (translation starts at hotBlock). */
  readonly hits: Uint16Array;
  /** Entries of a block start before it is translated (at most 65,535: the counters are 16-bit). */
  readonly hotBlock: number;
  /** ...and of a start another CPU of this thread translated (jit.ts knownBlockStarts). */
  readonly knownHot: number;
  readonly known: Uint8Array;
  /** Block starts translated in earlier processes (jit-hint-source.ts); null: none registered, or no translator. */
  private readonly hints: HintSource | null;
  private readonly pageBlocks = new Map<number, number[]>();
  private readonly blockLength = new Map<number, number>();
  /** Hot block starts waiting to be compiled together (LIMITS.batch), and since when. */
  private readonly waiting = new Set<number>();
  private waitingSince = 0;
  /** The thread's tier (jit.ts compileGeneration) when this CPU's blocks were last compiled. */
  private generation = compileGeneration();
  /** Blocks translated since power-on (a measure of code churn). */
  translations = 0;
  /** ...of which translated early because a hint matched RAM. */
  hintedTranslations = 0;

  private readonly space: CodeSpace | null;
  private readonly mem: Int32Array;
  private readonly owner: BlockOwner;

  /** space null: the plain interpreter, nothing is ever translated (the arrays are empty). */
  constructor(space: CodeSpace | null, mem: Int32Array, owner: BlockOwner, hotBlock: number) {
    this.space = space;
    this.mem = mem;
    this.owner = owner;
    const memBytes = mem.length << 2;
    const memWords = mem.length;
    const jit = space !== null;
    this.hotBlock = Math.min(Math.max(Math.floor(hotBlock), 1), 0xffff);
    this.hits = new Uint16Array(jit ? memWords : 0);
    this.knownHot = Math.min(this.hotBlock, JIT_LIMITS.knownBlock);
    this.known = jit ? knownBlockStarts(memBytes) : new Uint8Array(0);
    this.hints = jit ? hintSource(memBytes) : null;
    this.codeMark = space
      ? new Uint8Array(space.buffer, space.layout.codeMarkBase, memWords)
      : new Uint8Array(0);
    this.slotOf = space ? new Int32Array(space.buffer, space.layout.slotBase, memWords) : new Int32Array(0);
  }

  /** Whether hot code waits to be compiled. */
  get pending(): boolean {
    return this.waiting.size > 0;
  }

  /** Forget every translation (after RAM was changed behind the CPU's back, e.g. a boot load). */
  flush(): void {
    if (this.space === null) return;
    for (const pc of this.blockLength.keys()) this.dropBlock(pc);
    this.pageBlocks.clear();
    this.waiting.clear();
    this.codeMark.fill(0);
    this.hits.fill(0);
  }

  private dropBlock(pc: number): void {
    const slot = this.slotOf[pc];
    if (slot === 0) return;
    this.space?.free(slot);
    this.slotOf[pc] = 0;
    const len = this.blockLength.get(pc) ?? 0;
    this.blockLength.delete(pc);
    for (let i = 0; i < len; i++) this.codeMark[pc + i] = 0;
  }

  /** A store hit translated code at word w: drop the translations of its page. */
  invalidate(w: number): void {
    const page = w >>> JIT_LIMITS.pageShift;
    const starts = this.pageBlocks.get(page);
    if (starts === undefined) {
      this.codeMark[w] = 0;
      return;
    }
    this.pageBlocks.delete(page);
    const touched = new Set<number>();
    for (const pc of starts) {
      const len = this.blockLength.get(pc) ?? 1;
      for (let p = pc >>> JIT_LIMITS.pageShift; p <= (pc + len - 1) >>> JIT_LIMITS.pageShift; p++)
        touched.add(p);
      this.dropBlock(pc);
    }
    // The dropped blocks' words were unmarked, on neighbouring pages too: blocks that remain
    // there and share such words (blocks overlap) mark them again.
    for (const p of touched) {
      for (const pc of this.pageBlocks.get(p) ?? []) {
        if (this.slotOf[pc] === 0) continue;
        const len = this.blockLength.get(pc) ?? 0;
        for (let i = 0; i < len; i++) this.codeMark[pc + i] = 1;
      }
    }
  }

  /**
   * A block start became hot (`now`: the CPU's instruction count): it waits for company, so one
   * wasm module carries several blocks.
   */
  markHot(pc: number, now: number): void {
    if (this.known[pc] === HINTED && this.hits[pc] < this.hotBlock && this.hints !== null) {
      // Warm, and hinted by an earlier process: act on the hint only where RAM holds its words,
      // then translate every hinted block that RAM holds now, in one module.
      if (!this.hints.matches(this.mem, pc)) {
        this.known[pc] = 0; // a stale hint: this start waits for hotBlock like any other
        return;
      }
      const starts = this.hints.matching(this.mem, this.slotOf);
      for (const s of starts) this.waiting.add(s);
      this.hintedTranslations += starts.length;
      this.compileWaiting();
      return;
    }
    if (this.waiting.size === 0) this.waitingSince = now;
    this.waiting.add(pc);
    if (this.waiting.size >= JIT_LIMITS.batch || now - this.waitingSince >= JIT_LIMITS.batchDelay)
      this.compileWaiting();
  }

  /** Whether the thread has turned long-lived (jit.ts) since this CPU's blocks were compiled. */
  get behind(): boolean {
    return this.space !== null && this.generation !== compileGeneration();
  }

  /**
   * Compile every block this CPU holds again, for the thread's tier now, all in one module: when
   * the thread turns long-lived, a machine's blocks are the code it runs most, and compiled
   * together they fall into groups by address (jit-group.ts). Otherwise they would stay in the
   * fresh tier's code, which never tiers up (wasm-tiering.ts), for the machine's life.
   */
  recompile(): void {
    this.generation = compileGeneration();
    const space = this.space;
    if (space === null || this.blockLength.size === 0) return;
    const starts = [...this.blockLength.keys()];
    for (const pc of starts) {
      space.free(this.slotOf[pc]);
      this.slotOf[pc] = 0;
    }
    // A held block's words are as they were (a store into them dropped it), so these are the
    // same translations, blocks of the same lengths: the marks and pages stay.
    const slots = space.install(starts.map((pc) => this.translate(pc)));
    starts.forEach((pc, i) => {
      this.slotOf[pc] = slots[i];
    });
  }

  private translate(pc: number): Translation {
    const space = this.space as CodeSpace;
    const { displayStart, bus } = this.owner;
    return translateShared(this.mem, pc, space.layout, displayStart, bus.fixedReads);
  }

  compileWaiting(): void {
    const space = this.space;
    if (space === null) return;
    const starts = [...this.waiting].filter((pc) => this.slotOf[pc] === 0);
    this.waiting.clear();
    if (starts.length === 0) return;
    const blocks = starts.map((pc) => this.translate(pc));
    const slots = space.install(blocks);
    starts.forEach((pc, i) => {
      const length = blocks[i].length;
      this.translations++;
      this.known[pc] = 1;
      this.hints?.record(this.mem, pc, length);
      this.slotOf[pc] = slots[i];
      this.blockLength.set(pc, length);
      for (let w = 0; w < length; w++) this.codeMark[pc + w] = 1;
      const first = pc >>> JIT_LIMITS.pageShift;
      const last = (pc + length - 1) >>> JIT_LIMITS.pageShift;
      for (let p = first; p <= last; p++) {
        const list = this.pageBlocks.get(p);
        if (list === undefined) this.pageBlocks.set(p, [pc]);
        else list.push(pc);
      }
    });
  }
}
