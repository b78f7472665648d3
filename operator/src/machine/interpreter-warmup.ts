// A few thousand instructions through the interpreter before a thread's first machine runs, so
// that every path of Risc5.interpret (each opcode and mode, loads and stores of words and bytes,
// RAM, framebuffer and device addresses, branches taken and not, the ROM window, the void) has
// been seen once when V8 optimises it. Without this, V8 optimised the interpreter early in a
// boot, dropped that code each time a path it had not yet seen ran (a dozen times in a boot and
// a compile of the compiler) and recompiled it in the background, which a fresh process paid in
// CPU. The scratch CPU is a machine of its own (own RAM, a bus that answers 0): nothing of it
// reaches a real machine, and it never translates (its blocks never get hot). Measured with
// bench/machine's fresh processes against RETROKUBE_INTERPRETER_WARMUP=off (which skips it).

/** The part of the CPU's bus the warm-up provides (cpu.ts IoBus; no import: cpu.ts imports this). */
export interface ScratchBus {
  ioRead(addr: number): number;
  ioWrite(addr: number, value: number): void;
  voidFetch(pc: number): void;
}

/** The part of a Risc5 the warm-up drives. */
export interface ScratchCpu {
  readonly mem: Int32Array;
  readonly R: Int32Array;
  pc: number;
  rom: Int32Array | null;
  readonly fbVersion: number;
  readonly instructions: number;
  bus: ScratchBus;
  reset(): void;
  run(n: number): number;
}

export const LIMITS = {
  programs: 40, // random programs, each run once: enough for every opcode, register and mode
  length: 40, // instructions per program
  memBytes: 0x10000, // the scratch CPU's RAM (64 KiB; its framebuffer starts at displayStart)
  displayStart: 0xf000,
  busShapes: 5, // more than V8 keeps apart in one call site (4): the device calls go generic
} as const;

/** A small LCG: the same programs every time, no Math.random. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
}

export interface RandomProgramOptions {
  length: number; // instructions before the landing pad
  storeSlots: number; // loads and stores reach this many words (or bytes) above R13
  calls: boolean; // some forward branches are calls (BL), which write R15
}

/**
 * A program of random register, memory and forward-branch instructions whose loads and stores go
 * through R13 (set by the caller), ending in `B halt`. jit.test.ts runs the same kind of programs
 * on the translator and the interpreter.
 */
export function randomProgram(next: () => number, opts: RandomProgramOptions): Int32Array {
  const words: number[] = [];
  for (let i = 0; i < opts.length; i++) {
    const kind = next() % 10;
    const a = next() % 12;
    const b = next() % 14;
    if (kind < 6) {
      const op = next() % 16;
      const q = next() % 2;
      const u = op === 0 ? 0 : next() % 2; // MOV with u reads H/flags: that form comes below
      const v = next() % 2;
      const low = q ? next() & 0xffff : next() % 14;
      words.push((q << 30) | (u << 29) | (v << 28) | (a << 24) | (b << 20) | (op << 16) | low);
    } else if (kind < 7) {
      const which = next() % 3; // MOV', or reading H or the flags
      words.push(
        which === 0
          ? 0x60000000 | (a << 24) | (next() & 0xffff)
          : 0x20000000 | ((which - 1) << 28) | (a << 24),
      );
    } else if (kind < 9) {
      const store = next() % 2;
      const byte = next() % 2;
      const off = (next() % opts.storeSlots) * (byte ? 1 : 4);
      words.push(0x80000000 | (store << 29) | (byte << 28) | (a << 24) | (13 << 20) | off);
    } else {
      const cond = next() % 16; // a forward branch over 1..3 instructions, or a call (BL) past them
      const link = opts.calls && next() % 4 === 0 ? 0x10000000 : 0;
      words.push(0xe0000000 | link | (cond << 24) | (1 + (next() % 3)));
    }
  }
  for (let i = 0; i < 4; i++) words.push(0x40000000); // landing pad for the last branches
  words.push(0xe7ffffff); // halt: B halt
  return Int32Array.from(words);
}

/** What the warm-up reached (its test checks every kind was). */
export interface WarmUpCounts {
  ioReads: number;
  ioWrites: number;
  voidFetches: number;
  framebufferStores: number;
  instructions: number;
  /** The ROM window ran and its branch reached RAM. */
  romToRam: boolean;
}

/** Run the warm-up on a scratch CPU made by `make` (the caller's class; no import cycle). */
export function warmUpInterpreter(make: (bus: ScratchBus) => ScratchCpu): WarmUpCounts {
  let cpu: ScratchCpu | null = null;
  const counts = {
    ioReads: 0,
    ioWrites: 0,
    voidFetches: 0,
    framebufferStores: 0,
    instructions: 0,
    romToRam: false,
  };
  const bus: ScratchBus = {
    ioRead: () => {
      counts.ioReads++;
      return 0;
    },
    ioWrite: () => {
      counts.ioWrites++;
    },
    voidFetch: () => {
      counts.voidFetches++;
      if (cpu !== null) cpu.pc = 0; // as a reset would: back to known code
    },
  };
  cpu = make(bus);
  // The device calls see buses of several shapes (LIMITS.busShapes), so V8's optimised
  // interpreter calls them generically: with the warm-up's one bus, the first real machine's bus
  // (another class) threw that code away and V8 optimised the interpreter again, in every fresh
  // process.
  const buses = Array.from({ length: LIMITS.busShapes }, (_, k) => reshaped(bus, k));
  const mem = cpu.mem;
  const halt = 0x400; // a `B halt` of its own, where the void fetch and the ROM lead
  // Loads and stores near RAM's start, in the framebuffer, and at the device registers.
  const bases = [0x1000, LIMITS.displayStart + 0x100, -64];
  for (let seed = 1; seed <= LIMITS.programs; seed++) {
    const next = rng(seed);
    mem.fill(0);
    mem.set(randomProgram(next, { length: LIMITS.length, storeSlots: 16, calls: true }));
    mem[halt] = 0xe7ffffff;
    for (let r = 0; r < 13; r++) cpu.R[r] = next() | 0;
    cpu.R[13] = bases[seed % bases.length];
    cpu.bus = buses[seed % buses.length];
    cpu.pc = 0;
    cpu.run(LIMITS.length + 20);
  }
  // A byte store and a byte load in RAM, whatever the random programs reached before V8 optimises.
  cpu.bus = bus;
  mem.set(Int32Array.of(0xb1d00001 | 0, 0x91d00002 | 0, 0xe7ffffff | 0)); // STB R1, R13, 1; LDB R1, R13, 2; B halt
  cpu.R[13] = 0x2000; // above the halt word
  cpu.pc = 0;
  cpu.run(3);
  // The ROM window (a jump from there into RAM), and a branch into the void.
  cpu.rom = Int32Array.from({ length: 512 }, () => 0x40000000);
  cpu.rom[0] = 0xc700000e | 0; // B R14 (a PC-relative branch cannot reach RAM from the ROM)
  cpu.R[14] = halt << 2;
  cpu.reset();
  cpu.run(8);
  counts.romToRam = cpu.pc === halt;
  mem[0] = 0xc700000f | 0; // B R15
  cpu.R[15] = 0x7ffff000; // ...into the void
  cpu.pc = 0;
  cpu.run(8);
  counts.framebufferStores = cpu.fbVersion;
  counts.instructions = cpu.instructions;
  return counts;
}

/**
 * The same bus as an object of a shape of its own (a distinct first property), whose methods are
 * other functions than the bus's: a call site that has seen two functions calls generically too.
 */
function reshaped(bus: ScratchBus, k: number): ScratchBus {
  // Two sets of functions written apart: V8 tells functions apart by where they were written.
  const methods =
    k % 2 === 0
      ? {
          ioRead: (addr: number) => bus.ioRead(addr),
          ioWrite: (addr: number, value: number) => bus.ioWrite(addr, value),
          voidFetch: (pc: number) => bus.voidFetch(pc),
        }
      : {
          ioRead: (addr: number) => bus.ioRead(addr) | 0,
          ioWrite: (addr: number, value: number) => void bus.ioWrite(addr, value),
          voidFetch: (pc: number) => void bus.voidFetch(pc),
        };
  return Object.assign(Object.create(null) as object, { [`shape${k}`]: k }, methods) as ScratchBus;
}
