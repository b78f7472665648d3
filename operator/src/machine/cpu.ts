// The RISC5 processor: registers, flags, H, the instruction interpreter and the memory/I-O
// split. Built for speed: RAM is one Int32Array, the hot loop keeps PC and flags in locals,
// allocates nothing, and runs in batches (run(n)). Devices live behind the IoBus interface.
//
// Conventions: PC is a word index; addresses are byte addresses; any load/store at an address
// ≥ memory size goes to the bus (the top 64 bytes are the device registers). Instructions are
// fetched from RAM, else from the ROM window at 0xFFFFF800 (if a ROM is loaded), else the CPU
// has "branched into the void" and calls bus.reset() (the hardware/emulator resets to the ROM).

import { CpuBlocks } from './cpu-blocks.ts';
import { fpAdd, fpDiv, fpMul, idiv, idivResult, mulHighSigned, mulHighUnsigned } from './fpu.ts';
import { LIMITS as WARMUP, warmUpInterpreter } from './interpreter-warmup.ts';
import {
  CELL,
  CodeSpace,
  complexOp,
  defaultHotBlock,
  type FixedReads,
  type JitImports,
  memoryLayout,
} from './jit.ts';

export const LIMITS = {
  romStart: 0xfffff800, // byte address of the boot ROM window (hardware constant)
  romWords: 512, // ROM size in words (2 KiB, as on the FPGA board)
  ioStart: 0xffffffc0, // first device register (top 64 bytes of the address space)
} as const;

const ROM_START_WORD = LIMITS.romStart >>> 2;

/** Whether this thread's interpreter has had its warm-up (interpreter-warmup.ts); the lab has no `process`. */
let warmedUp = globalThis.process?.env.RETROKUBE_INTERPRETER_WARMUP === 'off';

/** What the CPU sees of the devices. Reads/writes of the top 64 bytes land here. */
export interface IoBus {
  /** A word read at byte address addr (≥ memory size); byte loads take a byte of it. */
  ioRead(addr: number): number;
  ioWrite(addr: number, value: number): void;
  /** Called when the CPU fetches outside RAM and ROM: the machine performs a (warm) reset. */
  voidFetch(pc: number): void;
  /** Registers whose reads always give one value and have no effect (translated code inlines them). */
  readonly fixedReads?: FixedReads;
}

export class Risc5 {
  readonly mem: Int32Array;
  readonly memBytes: number;
  readonly memWords: number;
  /** First byte of the framebuffer; stores at or above it bump fbVersion. */
  displayStart: number;
  /** The registers (a view into the same memory as RAM, so translated code reaches them too). */
  readonly R: Int32Array;
  pc = ROM_START_WORD;
  H = 0;
  /** N and Z are derived from the last register write (lazy flags). */
  nz = 0;
  C = 0;
  V = 0;
  rom: Int32Array | null = null;
  /** Instructions executed since power-on. */
  instructions = 0;
  /** Instruction count at the moment of the current I/O access (for the bus's idle logic). */
  ioInstr = 0;
  /** True while run() executes (instructions is then stale; ioInstr is exact during I/O). */
  private running = false;
  /** Counts framebuffer stores; viewers compare it to skip unchanged frames. */
  fbVersion = 0;
  /** Set by the bus during an I/O access to end run() early (idle, or a device wants attention). */
  stop = false;
  bus: IoBus;
  /** Translate hot RISC5 code to wasm blocks (jit.ts); false = the plain interpreter only. */
  readonly jit: boolean;
  /** The translated blocks: where they are, which starts are hot, what a store drops. */
  private readonly blocks: CpuBlocks;
  /** The cells that carry flags, H, the instruction count and stop into translated code. */
  private readonly cells: Int32Array;
  private readonly space: CodeSpace | null;
  /** instructions at the start of the current run of translated blocks (cells count from it). */
  private blockBase = 0;
  /** Blocks translated since power-on (a measure of code churn). */
  get translations(): number {
    return this.blocks.translations;
  }
  /** Entries of a block start before it is translated (jit.ts defaultHotBlock when not given). */
  get hotBlock(): number {
    return this.blocks.hotBlock;
  }
  /** ...of which translated early because a hint matched RAM. */
  get hintedTranslations(): number {
    return this.blocks.hintedTranslations;
  }

  constructor(
    memBytes: number,
    displayStart: number,
    bus: IoBus,
    opts: { jit?: boolean; hotBlock?: number } = {},
  ) {
    this.memBytes = memBytes;
    this.memWords = memBytes >>> 2;
    this.displayStart = displayStart;
    this.bus = bus;
    this.jit = opts.jit ?? true;
    // RAM and registers live in the translator's wasm memory (jit.ts layout), or in a plain buffer.
    const space = this.jit ? new CodeSpace(memBytes, this.translatedCodeImports()) : null;
    this.space = space;
    const buffer = space?.buffer ?? new ArrayBuffer(memoryLayout(memBytes).codeMarkBase);
    this.mem = new Int32Array(buffer, 0, this.memWords);
    this.R = new Int32Array(buffer, memBytes, 16);
    this.cells = new Int32Array(buffer, memBytes, 32);
    this.blocks = new CpuBlocks(space, this.mem, this, opts.hotBlock ?? defaultHotBlock());
    if (!warmedUp) {
      warmedUp = true;
      warmUpInterpreter(
        (scratch) =>
          new Risc5(WARMUP.memBytes, WARMUP.displayStart, scratch, { jit: this.jit, hotBlock: 0xffff }),
      );
    }
  }

  /** What translated code calls: the bus sees the same CPU state as under the interpreter. */
  private translatedCodeImports(): JitImports {
    const sync = (k: number) => {
      const cells = this.cells;
      this.ioInstr = this.blockBase + cells[CELL.instr] + k;
      this.fbVersion += cells[CELL.fb];
      cells[CELL.fb] = 0;
    };
    return {
      ioRead: (ad, k) => {
        sync(k);
        const v = this.bus.ioRead(ad >>> 0);
        this.cells[CELL.stop] = this.stop ? 1 : 0;
        return v;
      },
      ioWrite: (ad, v, k) => {
        sync(k);
        this.bus.ioWrite(ad >>> 0, v);
        this.cells[CELL.stop] = this.stop ? 1 : 0;
      },
      invalidate: (wi) => this.blocks.invalidate(wi),
      complexOp: (ir, b, c) => {
        this.H = this.cells[CELL.H];
        const r = complexOp(this, ir, b, c);
        this.cells[CELL.H] = this.H;
        return r;
      },
    };
  }

  /** Forget every translation (after RAM was changed behind the CPU's back, e.g. a boot load). */
  flushCode(): void {
    this.blocks.flush();
  }

  get N(): boolean {
    return this.nz < 0;
  }
  get Z(): boolean {
    return this.nz === 0;
  }
  setFlags(n: boolean, z: boolean, c: boolean, v: boolean): void {
    // Lazy flags cannot hold N and Z both set; the hardware never produces that from one value.
    this.nz = z ? 0 : n ? -1 : 1;
    this.C = c ? 1 : 0;
    this.V = v ? 1 : 0;
  }

  /** Reset as the hardware does: only PC changes (to the ROM start). */
  reset(): void {
    this.pc = ROM_START_WORD;
  }

  /**
   * Execute up to n instructions; returns how many ran. Stops early when a device sets `stop`.
   */
  /**
   * Instructions executed so far, exact at any moment: inside a device access (run() is under
   * way, so `instructions` still holds the count at the start of the batch) it is the count up to
   * and including the accessing instruction.
   */
  get now(): number {
    return this.running ? this.ioInstr : this.instructions;
  }

  run(n: number): number {
    this.stop = false;
    this.running = true;
    try {
      return this.space === null ? this.interpret(n) : this.runMixed(this.space, n);
    } finally {
      this.running = false;
    }
  }

  private runMixed(space: CodeSpace, n: number): number {
    const start = this.instructions;
    const end = start + n;
    const blocks = this.blocks;
    const slotOf = blocks.slotOf;
    const hits = blocks.hits;
    const known = blocks.known;
    const hotBlock = blocks.hotBlock;
    const knownHot = blocks.knownHot;
    if (blocks.behind) blocks.recompile();
    while (this.instructions < end) {
      const pc = this.pc;
      if (pc < this.memWords) {
        if (slotOf[pc] !== 0) this.runBlocks(space, end);
        else {
          // Count entries here too: a block that falls through a not-taken branch lands on code
          // that no taken branch reaches, and that code must be able to become hot as well.
          const n = ++hits[pc];
          if (n >= hotBlock || (n >= knownHot && known[pc] !== 0)) blocks.markHot(pc, this.instructions);
          this.interpret(end - this.instructions, true); // until a branch lands on hot code
        }
      } else {
        this.interpret(1); // the ROM window, or a branch into the void
      }
      if (this.stop) break;
    }
    if (blocks.pending) blocks.compileWaiting(); // a block waits at most one run() for company
    return this.instructions - start;
  }

  /**
   * Run translated blocks from this.pc on, block to block inside wasm, until one leads to
   * untranslated code, a device asks to stop, or the budget up to `end` is spent. State crosses
   * in the cells.
   */
  private runBlocks(space: CodeSpace, end: number): void {
    const cells = this.cells;
    cells[CELL.nz] = this.nz;
    cells[CELL.C] = this.C;
    cells[CELL.V] = this.V;
    cells[CELL.H] = this.H;
    cells[CELL.instr] = 0;
    cells[CELL.stop] = 0;
    cells[CELL.fb] = 0;
    this.blockBase = this.instructions;
    const budget = Math.min(end - this.instructions, 0x40000000); // the count cell is an int32
    this.pc = space.dispatch(this.pc, budget);
    this.nz = cells[CELL.nz];
    this.C = cells[CELL.C];
    this.V = cells[CELL.V];
    this.H = cells[CELL.H];
    this.instructions = this.blockBase + cells[CELL.instr];
    this.fbVersion += cells[CELL.fb];
  }

  /**
   * The plain interpreter: up to n instructions, one at a time. With toHot it also returns when
   * a taken branch lands on translated or hot code (counting how often each target is reached).
   */
  interpret(n: number, toHot = false): number {
    const blocks = this.blocks;
    const hits = blocks.hits;
    const slotOf = blocks.slotOf;
    const mem = this.mem;
    const cm = blocks.codeMark;
    const jit = this.jit;
    const hot = blocks.hotBlock;
    const known = blocks.known;
    const knownHot = blocks.knownHot;
    const R = this.R;
    const memWords = this.memWords;
    const memBytes = this.memBytes;
    const displayStart = this.displayStart;
    let pc = this.pc;
    let nz = this.nz;
    let C = this.C;
    let V = this.V;
    let H = this.H;
    const base = this.instructions;
    let i = 0;
    while (i < n) {
      let ir: number;
      if (pc < memWords) {
        ir = mem[pc];
      } else if (this.rom !== null && pc >= ROM_START_WORD && pc < ROM_START_WORD + LIMITS.romWords) {
        ir = this.rom[pc - ROM_START_WORD];
      } else {
        // Branched into the void: hand over to the machine (it resets), then reload state.
        this.pc = pc;
        this.nz = nz;
        this.C = C;
        this.V = V;
        this.H = H;
        this.instructions = base + i;
        this.ioInstr = base + i;
        this.bus.voidFetch(pc);
        pc = this.pc;
        nz = this.nz;
        C = this.C;
        V = this.V;
        H = this.H;
        i++;
        continue;
      }
      pc++;
      i++;
      if (ir >= 0) {
        // Register instruction (p = 0).
        const a = (ir >>> 24) & 15;
        const b = R[(ir >>> 20) & 15];
        let c: number;
        if ((ir & 0x40000000) === 0) c = R[ir & 15];
        else if ((ir & 0x10000000) === 0) c = ir & 0xffff;
        else c = ir | 0xffff0000;
        let r: number;
        switch ((ir >>> 16) & 15) {
          case 0: // MOV
            if ((ir & 0x20000000) === 0) r = c;
            else if ((ir & 0x40000000) !== 0) r = c << 16;
            else if ((ir & 0x10000000) !== 0)
              r = (((nz < 0 ? 8 : 0) | (nz === 0 ? 4 : 0) | (C << 1) | V) << 28) | 0xd0;
            else r = H;
            break;
          case 1: // LSL
            r = b << c;
            break;
          case 2: // ASR
            r = b >> c;
            break;
          case 3: // ROR
            r = (b >>> c) | (b << (32 - (c & 31)));
            break;
          case 4: // AND
            r = b & c;
            break;
          case 5: // ANN
            r = b & ~c;
            break;
          case 6: // IOR
            r = b | c;
            break;
          case 7: // XOR
            r = b ^ c;
            break;
          case 8: {
            // ADD / ADC: carry is bit 32 of the 33-bit sum, as in the hardware adder.
            // Int32 arithmetic only: carry out of bit 31 = majority of b31, c31 and the carry into it.
            const cin = (ir & 0x20000000) !== 0 ? C : 0;
            r = (((b + c) | 0) + cin) | 0;
            C = ((b & c) | ((b | c) & ~r)) >>> 31;
            V = ((r ^ c) & (r ^ b)) >>> 31;
            break;
          }
          case 9: {
            // SUB / SBC: C is the borrow.
            const cin = (ir & 0x20000000) !== 0 ? C : 0;
            r = (((b - c) | 0) - cin) | 0;
            C = ((~b & c) | ((~b | c) & r)) >>> 31;
            V = ((b ^ c) & (r ^ b)) >>> 31;
            break;
          }
          case 10: {
            // MUL: 64-bit product, low word to a, high word to H.
            r = Math.imul(b, c);
            if ((ir & 0x20000000) === 0) H = mulHighSigned(b, c);
            else H = mulHighUnsigned(b >>> 0, c >>> 0);
            break;
          }
          case 11: {
            // DIV: floor division for positive divisors; the hardware's serial divider otherwise.
            if (c > 0) {
              if ((ir & 0x20000000) === 0) {
                let q = (b / c) | 0;
                let rem = b - Math.imul(q, c);
                if (rem < 0) {
                  q = (q - 1) | 0;
                  rem = (rem + c) | 0;
                }
                r = q;
                H = rem;
              } else {
                const bu = b >>> 0;
                const q = Math.floor(bu / c);
                r = q | 0;
                H = (bu - q * c) | 0;
              }
            } else {
              // Signed when u = 0, as RISC5.v wires the divider (.u(~u)); the pdewacht emulator
              // passes u itself here, which differs only for a negative dividend.
              idiv(b, c, (ir & 0x20000000) === 0);
              r = idivResult[0];
              H = idivResult[1];
            }
            break;
          }
          case 12: // FAD (u: FLT, v: FLOOR)
            r = fpAdd(b, c, (ir & 0x20000000) !== 0, (ir & 0x10000000) !== 0);
            break;
          case 13: // FSB
            r = fpAdd(b, c ^ 0x80000000, (ir & 0x20000000) !== 0, (ir & 0x10000000) !== 0);
            break;
          case 14: // FML
            r = fpMul(b, c);
            break;
          default: // FDV
            r = fpDiv(b, c);
            break;
        }
        R[a] = r;
        nz = r;
      } else if ((ir & 0x40000000) === 0) {
        // Memory instruction (p = 1, q = 0).
        const addr = (R[(ir >>> 20) & 15] + ((ir << 12) >> 12)) >>> 0;
        if ((ir & 0x20000000) === 0) {
          let v: number;
          let io = false;
          if (addr < memBytes) {
            v = mem[addr >>> 2];
          } else {
            this.ioInstr = base + i;
            v = this.bus.ioRead(addr);
            io = true;
          }
          if ((ir & 0x10000000) !== 0) v = (v >>> ((addr & 3) << 3)) & 0xff;
          R[(ir >>> 24) & 15] = v;
          nz = v;
          if (io && this.stop) break;
        } else {
          const v = R[(ir >>> 24) & 15];
          if (addr < memBytes) {
            if ((ir & 0x10000000) === 0) {
              mem[addr >>> 2] = v;
            } else {
              const sh = (addr & 3) << 3;
              const w = addr >>> 2;
              mem[w] = (mem[w] & ~(0xff << sh)) | ((v & 0xff) << sh);
            }
            if (addr >= displayStart) this.fbVersion++;
            if (jit && cm[addr >>> 2] !== 0) blocks.invalidate(addr >>> 2);
          } else {
            this.ioInstr = base + i;
            this.bus.ioWrite(addr, (ir & 0x10000000) === 0 ? v : v & 0xff);
            if (this.stop) break;
          }
        }
      } else {
        // Branch instruction (p = 1, q = 1).
        let t: boolean;
        switch ((ir >>> 24) & 7) {
          case 0:
            t = nz < 0;
            break;
          case 1:
            t = nz === 0;
            break;
          case 2:
            t = C !== 0;
            break;
          case 3:
            t = V !== 0;
            break;
          case 4:
            t = C !== 0 || nz === 0;
            break;
          case 5:
            t = nz < 0 !== (V !== 0);
            break;
          case 6:
            t = nz < 0 !== (V !== 0) || nz === 0;
            break;
          default:
            t = true;
        }
        if ((ir & 0x08000000) !== 0) t = !t;
        if (t) {
          if ((ir & 0x10000000) !== 0) {
            R[15] = pc << 2;
            nz = R[15];
          }
          if ((ir & 0x20000000) === 0) pc = R[ir & 15] >>> 2;
          else pc = (pc + ((ir << 8) >> 8)) >>> 0;
          if (toHot && pc < memWords) {
            if (slotOf[pc] !== 0) break;
            const n = ++hits[pc];
            if (n >= hot || (n >= knownHot && known[pc] !== 0)) break;
          }
        }
      }
    }
    this.pc = pc;
    this.nz = nz;
    this.C = C;
    this.V = V;
    this.H = H;
    this.instructions = base + i;
    return i;
  }
}
