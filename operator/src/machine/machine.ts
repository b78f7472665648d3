// The RISC5 machine (Project Oberon's board, as the pdewacht emulator models it) in one object.
//
// ## Using it (the API other parts build on)
//
//   import { Machine } from './machine.ts';
//   const m = new Machine({ disk: fs.readFileSync(copyOfDsk), clock: 'deterministic' });
//   m.runUntil(() => m.booted, { maxInstructions: 20e6 });   // Oberon.Loop is running
//   m.runCommand('System.Directory *.Tool');                  // type it, middle-click it
//   m.runUntilIdle();                                          // until Oberon waits for input
//   const shot = m.snapshot();                                 // FrameSnapshot (screen-input.ts)
//   m.serialText(); m.disk.bytes;                              // RS232 output, the disk now
//
// - `Machine` is synchronous and single-threaded: you drive it with run(n)/runFor(ms)/
//   runUntil(pred). With clock 'deterministic' the ms timer is instructions/25,000 (and idle
//   stretches skip virtual time), so runs are reproducible bit for bit — use it for tests and
//   the disk builder. With clock 'realtime' the timer is the wall clock; pacing to 25 MHz and
//   sleeping while idle is the job of the worker runner (runner.ts: MachineRunner), which is
//   what long-lived machines (CLI, Kube nodes) use.
// - Input is queued and paced by the machine itself: typeText()/key() push one key stroke into
//   the 16-byte PS/2 FIFO only when Oberon has drained it, and mouse states (click(), mouse())
//   are held until Oberon has read them several times and for holdMs of machine time, so no
//   click is lost however busy the machine is. `inputPending` tells when all input is consumed.
// - Screen coordinates in click()/moveMouse() are Oberon's (origin bottom-left, y up), the same
//   as MachineInput.mouse; use `screenToOberon(y)` if you measured y from the top of a PNG.
// - Boot is native (no ROM bytes): at power-on and on every reset the machine does what the
//   boot ROM does — SP := stackOrg, MT := 20H; on a cold start (LNK = 0) it loads the inner core
//   from SD block 80004H on (length from word 16 of the first block; or from RS232 when switch 0
//   is set), stores MemLim at 12 and stackOrg at 24, sets R0 := 0 and jumps to 0. A ROM image
//   built with our assembler can be installed instead (setRom()).
// - The disk is a DiskImage (sd-card.ts) over a Buffer; give it an onWrite hook to write
//   through to a file. The machine never opens files itself.

import { type BootImage, blocksData, fnv64, LIMITS as IMAGE_LIMITS, sameBlocks } from './boot-image.ts';
import { bootRom } from './boot-rom.ts';
import { type IoBus, Risc5 } from './cpu.ts';
import type { FixedReads } from './jit.ts';
import { type AirPort, Nrf24 } from './nrf24.ts';
import { findTaskRing, nextTaskDue, type TaskRing } from './oberon-tasks.ts';
import { textToPs2 } from './ps2.ts';
import type { FrameSnapshot, MachineInput, MachineScreen, MouseButtons } from './screen-input.ts';
import { leftmostInk, lowestInkRow, titleBars } from './screen-scan.ts';
import { DiskImage, SdCard } from './sd-card.ts';

export const LIMITS = {
  hz: 25_000_000, // the FPGA board's clock: instructions per emulated second
  instrPerMs: 25_000, // hz / 1000: the deterministic clock's instructions per timer tick
  defaultMemBytes: 0x100000, // 1 MiB, the board's RAM
  defaultDisplayStart: 0xe7f00, // where Wirth's Display module expects the framebuffer
  defaultWidth: 1024, // board framebuffer width
  defaultHeight: 768, // board framebuffer height
  maxMemoryMiB: 32, // the emulator's --mem clamp; larger would move the display beyond Oberon's reach
  maxWidth: 2048, // the emulator's --size clamp
  maxHeight: 2048, // the emulator's --size clamp
  displayMagic: 0x53697a67, // 'Sizg': tells the image's Display.Mod the framebuffer layout
  keyFifoBytes: 16, // the board's PS/2 FIFO
  inputQueueItems: 100_000, // queued key strokes/mouse states before new input is refused
  serialOutKeep: 1 << 20, // RS232 output bytes kept (older bytes are dropped)
  ledHistoryKeep: 256, // LED values kept for inspection
  idlePolls: 24, // consecutive quiet polls (timer/empty keyboard reads) that mean "Oberon idles"
  idlePollGap: 4000, // at most this many instructions between two polls of an idle loop
  mouseMinReads: 3, // a queued mouse state is read at least this often before the next one
  clickHoldMs: 40, // a click's press and release each last this long (machine time)
  fsOffsetBlock: 0x80000, // SD block of Oberon sector 0 (Kernel.FSoffset)
  bootBlock: 0x80004, // first SD block of the boot area (Oberon sector 2)
  moduleTable: 0x20, // MT register value set by the boot loader
  taskRingRetryMs: 2000, // an unfound task ring is looked for again after this much machine time
  boardStackOrg: 0x80000, // BootLoad's stackOrg for the board layout (heap from here to MemLim)
} as const;

const ROM_START_WORD = 0xfffff800 >>> 2;

export type ClockMode = 'realtime' | 'deterministic';

export interface MachineOptions {
  /** The disk (a Buffer is wrapped in a DiskImage). Pass a copy: Oberon writes to it. */
  disk: DiskImage | Buffer;
  /** RAM in MiB with the display placed at that address (the emulator's --mem). Omit for the board layout. */
  memoryMiB?: number;
  /** Display size (the emulator's --size); only with a custom layout. Width is rounded down to 32. */
  width?: number;
  height?: number;
  clock?: ClockMode;
  /** Fed into RS232 receive from power-on (Kube's Boot.Run reads it). */
  commands?: string;
  /** Switch bits (bit 0: boot from the serial line). */
  switches?: number;
  /** Where radio frames go. */
  air?: AirPort | null;
  /** Host clock in ms (realtime mode); default performance.now. */
  now?: () => number;
  /**
   * Translate hot RISC5 code to WebAssembly (jit.ts). On by default: tight loops run about 4× and
   * Oberon's compiler about 1.5× as fast as on the interpreter (bench/machine); false = interpreter only.
   */
  jit?: boolean;
  /** With jit: entries of a block before it is translated (default jit.ts LIMITS.hotBlock). */
  hotBlock?: number;
  /** 'native' (default): the boot loader's work done by the host; 'assembled': our ROM (boot-rom.ts) runs on the CPU. */
  boot?: 'native' | 'assembled';
  /**
   * Boot images (boot-image.ts): given (even empty), the machine starts from the first that fits
   * its configuration and disk, else boots for real and records one (`bootImage` once taken).
   * Either way the timer runs on machine time until something from outside reaches the machine.
   */
  bootImages?: readonly BootImage[];
}

export interface RunResult {
  executed: number;
  /** True when the run ended because Oberon was idle (waiting for time or input). */
  idle: boolean;
}

type MouseItem = Extract<InputItem, { kind: 'mouse' }>;

type InputItem =
  | { kind: 'keys'; bytes: number[] }
  | {
      kind: 'mouse';
      x: number;
      y: number;
      buttons: number;
      /** Keep the current mouse state (a pause between steps). */
      keep: boolean;
      holdMs: number;
      applied: boolean;
      at: number;
      reads: number;
    }
  /** A step that looks at the machine (e.g. the screen) when reached and returns the next items. */
  | { kind: 'action'; run: () => InputItem[] };

function mouseItem(x: number, y: number, buttons: number, holdMs: number): MouseItem {
  return { kind: 'mouse', x, y, buttons, keep: false, holdMs, applied: false, at: 0, reads: 0 };
}

export type ButtonName = 'left' | 'middle' | 'right';
const BUTTON_BITS: Record<ButtonName, number> = { right: 1 << 24, middle: 1 << 25, left: 1 << 26 };

/**
 * The boot commands with their last line ended (";"). Boot.Run ends the last line when the port
 * stays quiet for 20 ms, so a command fed later (serialFeed) while a slow machine has not yet read
 * them would otherwise join it: "Kube.Start" + "KubeNet.Serve …;" ran as one unknown command, and
 * neither ran (the DR suite's plane restart under heavy load).
 */
export function endCommands(commands: string): string {
  return commands === '' || /[;\r\n]\s*$/.test(commands) ? commands : `${commands};`;
}

export class Machine implements MachineScreen, MachineInput, IoBus {
  /** The SPI status reads "ready" always and has no effect (see ioRead): translated code inlines it. */
  readonly fixedReads: FixedReads = [[0xffffffd4 | 0, 1]];
  readonly cpu: Risc5;
  readonly disk: DiskImage;
  readonly sd: SdCard;
  readonly radio = new Nrf24();
  readonly clock: ClockMode;
  readonly memBytes: number;
  readonly displayStart: number;
  readonly width: number;
  readonly height: number;
  readonly customDisplay: boolean;
  readonly memLim: number;
  readonly stackOrg: number;
  switches: number;
  commands: string;

  // Devices.
  private spiSel = 0;
  private spiFast = false;
  private serialIn: Uint8Array = new Uint8Array(0);
  private serialPos = 0;
  private serialOut: number[] = [];
  private serialOutTotal = 0;
  leds = 0;
  readonly ledHistory: number[] = [];
  private mouseState = 0;
  private readonly keyFifo: number[] = [];
  private readonly input: InputItem[] = [];
  clipboardIn = '';
  private clipReadPos = 0;
  private clipOutLen = 0;
  private clipOut: number[] = [];
  /** Called with each text Oberon puts on the clipboard. */
  onClipboard: ((text: string) => void) | null = null;
  /** Called with each byte Oberon writes to RS232. */
  onSerial: ((byte: number) => void) | null = null;
  onLeds: ((value: number) => void) | null = null;

  // Time and idleness.
  private readonly hostNow: () => number;
  private wallStart = 0;
  /** Virtual instructions skipped while idle (deterministic clock). */
  private skipped = 0;
  private lastPoll = 0;
  private quietPolls = 0;
  private activity = false;
  private lastFb = 0;
  private idleHit = false;
  /** Times the CPU fetched outside RAM/ROM (each one resets the machine, as on the board). */
  voidFetches = 0;
  /** True once Oberon's main loop has run idle at least once since power-on. */
  booted = false;
  // Boot images (see MachineOptions.bootImages).
  private readonly imageCandidates: readonly BootImage[] | null;
  /** Real-time clock still on machine time (the boot is still a function of disk and configuration). */
  private virtualClock = false;
  /** Something from outside (serial, radio, clipboard, input) reached the machine since power-on. */
  private external = false;
  private inputEver = false;
  private capturing: number[] | null = null;
  /** While recording: the block reads before the current run, and a state buffer to reuse. */
  private readsBefore = 0;
  private spareImage: BootImage | null = null;
  /** The boot image this boot recorded (once final), for the next machine like this one. */
  bootImage: BootImage | null = null;
  /** True when this boot started from a boot image. */
  restored = false;
  /** Where Oberon's task ring was found (null: not yet), and when it was last looked for. */
  private taskRing: TaskRing | null = null;
  private taskRingSearchedAt = Number.NEGATIVE_INFINITY;

  constructor(opts: MachineOptions) {
    this.disk = opts.disk instanceof DiskImage ? opts.disk : new DiskImage(opts.disk);
    this.sd = new SdCard(this.disk);
    this.clock = opts.clock ?? 'realtime';
    this.hostNow = opts.now ?? (() => performance.now());
    this.switches = opts.switches ?? 0;
    this.commands = opts.commands ?? '';
    this.radio.air = opts.air ?? null;
    this.radio.now = () => this.timerMs();
    this.customDisplay =
      opts.memoryMiB !== undefined || opts.width !== undefined || opts.height !== undefined;
    if (this.customDisplay) {
      const mib = Math.min(Math.max(Math.floor(opts.memoryMiB ?? 1), 1), LIMITS.maxMemoryMiB);
      const w = Math.min(
        Math.max(Math.floor((opts.width ?? LIMITS.defaultWidth) / 32) * 32, 32),
        LIMITS.maxWidth,
      );
      const h = Math.min(Math.max(Math.floor(opts.height ?? LIMITS.defaultHeight), 1), LIMITS.maxHeight);
      this.displayStart = mib * 0x100000;
      this.width = w;
      this.height = h;
      this.memBytes = this.displayStart + (w * h) / 8;
    } else {
      this.displayStart = LIMITS.defaultDisplayStart;
      this.width = LIMITS.defaultWidth;
      this.height = LIMITS.defaultHeight;
      this.memBytes = LIMITS.defaultMemBytes;
    }
    this.memLim = this.displayStart - 16;
    // Wirth's BootLoad (and the reference ROM) put the stack origin at 80000H on the board; only
    // the emulator's --mem/--size layouts patch it to display/2 (which is 80000H for 1 MiB too).
    this.stackOrg = this.customDisplay ? this.displayStart / 2 : LIMITS.boardStackOrg;
    this.cpu = new Risc5(this.memBytes, this.displayStart, this, {
      jit: opts.jit ?? true,
      hotBlock: opts.hotBlock,
    });
    if (opts.boot === 'assembled') this.setRom(bootRom(this.memLim, this.stackOrg));
    this.imageCandidates = opts.bootImages ?? null;
    this.powerOn();
  }

  // ---------------------------------------------------------------- power and boot

  /** Power-cycle: RAM and registers cleared, devices reset, cold boot from disk. */
  powerOn(): void {
    const cpu = this.cpu;
    cpu.mem.fill(0);
    cpu.flushCode();
    cpu.R.fill(0);
    cpu.H = 0;
    cpu.setFlags(false, false, false, false);
    cpu.instructions = 0;
    cpu.ioInstr = 0;
    cpu.fbVersion = 0;
    cpu.pc = ROM_START_WORD;
    this.skipped = 0;
    this.wallStart = this.hostNow();
    this.radio.reset();
    this.spiSel = 0;
    this.spiFast = false;
    this.serialIn = new TextEncoder().encode(endCommands(this.commands));
    this.serialPos = 0;
    this.keyFifo.length = 0;
    this.input.length = 0;
    this.mouseState = 0;
    this.booted = false;
    this.taskRing = null;
    this.taskRingSearchedAt = Number.NEGATIVE_INFINITY;
    this.quietPolls = 0;
    this.idleHit = false;
    if (this.customDisplay) {
      const w = LIMITS.defaultDisplayStart >>> 2;
      cpu.mem[w] = LIMITS.displayMagic;
      cpu.mem[w + 1] = this.width;
      cpu.mem[w + 2] = this.height;
      cpu.mem[w + 3] = this.displayStart;
    }
    this.external = false;
    this.inputEver = false;
    this.bootImage = null;
    this.restored = false;
    this.capturing = null;
    this.spareImage = null;
    this.disk.readLog = null;
    this.virtualClock = false;
    if (this.imageCandidates !== null) {
      this.virtualClock = this.clock === 'realtime';
      this.restored = this.imageCandidates.some((image) => this.restoreBoot(image));
      if (!this.restored) {
        this.capturing = [];
        this.disk.readLog = this.capturing;
      }
    }
  }

  // ---------------------------------------------------------------- boot images

  /** What a boot depends on besides the disk: layout, switches and the boot code. */
  bootKey(): string {
    const rom = this.cpu.rom === null ? 'native' : Array.from(this.cpu.rom).join(',');
    return `${this.memBytes} ${this.displayStart} ${this.width}x${this.height} ${this.customDisplay} ${this.switches} ${rom}`;
  }

  /** The state now; `reuse` (an earlier, discarded state) lends its RAM buffer. */
  private saveBoot(reads: number[], reuse: BootImage | null = null): BootImage {
    const cpu = this.cpu;
    const ramNow = new Uint8Array(cpu.mem.buffer, cpu.mem.byteOffset, this.memBytes);
    let ram: Uint8Array;
    if (reuse !== null && reuse.ram.length === this.memBytes) {
      ram = reuse.ram;
      ram.set(ramNow);
    } else ram = ramNow.slice();
    return {
      key: this.bootKey(),
      reads,
      readData: new Uint8Array(0),
      readsHash: '',
      instructions: cpu.instructions,
      skipped: this.skipped,
      cpu: {
        pc: cpu.pc,
        nz: cpu.nz,
        C: cpu.C,
        V: cpu.V,
        H: cpu.H,
        R: cpu.R.slice(),
        fbVersion: cpu.fbVersion,
      },
      ram,
      devices: {
        leds: this.leds,
        ledHistory: [...this.ledHistory],
        spiSel: this.spiSel,
        spiFast: this.spiFast,
        lastPoll: this.lastPoll,
        quietPolls: this.quietPolls,
        activity: this.activity,
        lastFb: this.lastFb,
        booted: this.booted,
        voidFetches: this.voidFetches,
        sd: this.sd.saveState(),
      },
    };
  }

  /**
   * A hash of everything a program on this machine can observe or that decides what it does next:
   * RAM, registers, flags, H, PC, the instruction and cycle counts, the timer (on machine time),
   * the LEDs and their history, the SD card's protocol state, the idle-poll state, the serial line
   * positions, the input queue and the radio's registers. Two machines with equal digests run on
   * identically (boot-image.test.ts compares restored and real boots with it).
   */
  stateDigest(): string {
    const img = this.saveBoot([]);
    const { R: _r, ...cpu } = img.cpu;
    const { sd, ...devices } = img.devices;
    const { tx: _tx, rx: _rx, cmd: _cmd, ...sdRest } = sd;
    return fnv64([
      img.ram,
      new Uint8Array(img.cpu.R.buffer),
      new Uint8Array(sd.tx.buffer),
      new Uint8Array(sd.rx.buffer),
      sd.cmd,
      this.radio.regs,
      JSON.stringify({
        instructions: img.instructions,
        cycles: this.cycles,
        timer: Math.floor(this.cycles / LIMITS.instrPerMs),
        cpu,
        devices,
        sdRest,
        serial: [this.serialPos, this.serialIn.length, this.serialOutTotal],
        input: [this.input.length, this.keyFifo.length, this.mouseState],
      }),
    ]);
  }

  /** Start from the image if it fits this machine and disk; false (nothing changed) otherwise. */
  private restoreBoot(image: BootImage): boolean {
    if (image.key !== this.bootKey() || image.ram.length !== this.memBytes) return false;
    if (!sameBlocks(this.disk, image)) return false;
    const cpu = this.cpu;
    new Uint8Array(cpu.mem.buffer, cpu.mem.byteOffset, this.memBytes).set(image.ram);
    cpu.flushCode();
    cpu.R.set(image.cpu.R);
    cpu.pc = image.cpu.pc;
    cpu.nz = image.cpu.nz;
    cpu.C = image.cpu.C;
    cpu.V = image.cpu.V;
    cpu.H = image.cpu.H;
    cpu.fbVersion = image.cpu.fbVersion;
    cpu.instructions = image.instructions;
    cpu.ioInstr = image.instructions;
    this.skipped = image.skipped;
    const d = image.devices;
    this.leds = d.leds;
    this.ledHistory.length = 0;
    this.ledHistory.push(...d.ledHistory);
    this.spiSel = d.spiSel;
    this.spiFast = d.spiFast;
    this.lastPoll = d.lastPoll;
    this.quietPolls = d.quietPolls;
    this.activity = d.activity;
    this.lastFb = d.lastFb;
    this.booted = d.booted;
    this.voidFetches = d.voidFetches;
    this.sd.loadState(d.sd);
    if (this.booted) this.leaveVirtualClock();
    return true;
  }

  /** The timer follows the wall clock from here on, continuing from the machine time reached. */
  private leaveVirtualClock(): void {
    if (!this.virtualClock) return;
    const t = this.timerMs();
    this.virtualClock = false;
    this.wallStart = this.hostNow() - t;
  }

  /** Something from outside reached the machine: its state is no longer a function of the disk alone. */
  private markExternal(): void {
    if (this.external) return;
    this.external = true;
    this.leaveVirtualClock();
  }

  /** After each run() while recording: the image is final at the first outside event or at boot. */
  private recordBoot(before: BootImage | null): void {
    const reads = this.capturing;
    if (reads === null) return;
    let image: BootImage | null = null;
    if (this.disk.writes > 0 || reads.length > IMAGE_LIMITS.maxReads) image = null;
    else if (this.external) {
      image = before;
      if (image !== null) image.reads = reads.slice(0, this.readsBefore);
    } else if (this.booted) image = this.saveBoot([...reads]);
    else {
      this.spareImage = before; // its buffers serve the next run's state
      return;
    }
    this.spareImage = null;
    this.capturing = null;
    this.disk.readLog = null;
    if (image === null) return;
    image.readData = blocksData(this.disk, image.reads);
    image.readsHash = fnv64([new Uint8Array(Int32Array.from(image.reads).buffer), image.readData]);
    this.bootImage = image;
  }

  /** Warm reset (the board's reset button): only PC changes; the boot code then skips the disk. */
  reset(): void {
    this.cpu.reset();
  }

  /** Install a boot ROM (≤ 512 words, e.g. from asm.ts) instead of the native boot. */
  setRom(words: Int32Array | null): void {
    if (words !== null && words.length > 512) throw new Error(`a ROM holds 512 words, got ${words.length}`);
    if (words === null) {
      this.cpu.rom = null;
      return;
    }
    const rom = new Int32Array(512);
    rom.set(words);
    this.cpu.rom = rom;
  }

  voidFetch(pc: number): void {
    if (pc === ROM_START_WORD && this.cpu.rom === null) {
      this.nativeBoot();
      return;
    }
    this.voidFetches++;
    this.cpu.reset();
  }

  /** What the boot ROM does (BootLoad.Mod), performed natively. */
  private nativeBoot(): void {
    const cpu = this.cpu;
    const R = cpu.R;
    R[14] = this.stackOrg;
    R[12] = LIMITS.moduleTable;
    const cold = R[15] === 0;
    if (cold) this.setLeds(0x80);
    if ((this.switches & 1) !== 0) {
      this.markExternal(); // the inner core comes from the serial line
      this.setLeds(0x81);
      this.loadFromLine();
    } else if (cold) {
      this.setLeds(0x82);
      this.loadFromDisk();
    }
    cpu.flushCode(); // the loader wrote RAM directly
    cpu.mem[12 >>> 2] = this.memLim;
    cpu.mem[24 >>> 2] = this.stackOrg;
    this.setLeds(0x84);
    R[0] = 0;
    cpu.nz = 0;
    cpu.pc = 0;
  }

  private loadFromDisk(): void {
    const mem = this.cpu.mem;
    let src = LIMITS.bootBlock;
    this.disk.readBlock(src, mem, 0);
    const lim = mem[16 >>> 2];
    src++;
    for (let dst = 512; dst < lim && dst + 512 <= this.memBytes; dst += 512) {
      this.disk.readBlock(src, mem, dst >>> 2);
      src++;
    }
  }

  /** BootLoad.LoadFromLine: [length][address][words…] records from RS232, ended by length 0. */
  private loadFromLine(): void {
    const recInt = (): number => {
      let v = 0;
      for (let i = 0; i < 4; i++) v |= this.serialReadByte() << (8 * i);
      return v;
    };
    let len = recInt();
    while (len > 0) {
      let adr = recInt();
      do {
        const dat = recInt();
        if (adr >>> 0 < this.memBytes) this.cpu.mem[adr >>> 2] = dat;
        adr += 4;
        len -= 4;
      } while (len > 0);
      len = recInt();
    }
  }

  // ---------------------------------------------------------------- time

  /** The millisecond counter Oberon reads at −64. */
  timerMs(): number {
    if (this.clock === 'deterministic' || this.virtualClock)
      return Math.floor(this.cycles / LIMITS.instrPerMs);
    return Math.floor(this.hostNow() - this.wallStart);
  }

  /**
   * When Oberon's next task is due (on the timerMs() scale), read from its task ring in RAM; null
   * when the ring is not found (another system, or not booted). Idle runners sleep until then.
   */
  nextTaskDueMs(): number | null {
    const mem = this.cpu.mem;
    if (this.taskRing !== null) {
      const due = nextTaskDue(mem, this.taskRing, this.stackOrg, this.memLim);
      if (due !== null) return due;
      this.taskRing = null;
    }
    // Look again at most once per LIMITS.taskRingRetryMs of machine time (a scan reads the module area).
    const now = this.timerMs();
    if (now - this.taskRingSearchedAt < LIMITS.taskRingRetryMs) return null;
    this.taskRingSearchedAt = now;
    this.taskRing = findTaskRing(mem, this.stackOrg, this.memLim);
    return this.taskRing === null ? null : nextTaskDue(mem, this.taskRing, this.stackOrg, this.memLim);
  }

  /** Instructions executed plus idle time skipped (deterministic), i.e. emulated cycles. */
  get cycles(): number {
    // During a device access the count of the accessing instruction, not of the run's start:
    // the timer must not depend on where run() chunks or translated blocks begin.
    return this.cpu.now + this.skipped;
  }

  // ---------------------------------------------------------------- running

  /**
   * Run up to n instructions. Ends early when Oberon idles (then, with the deterministic clock,
   * virtual time jumps to the next millisecond so waiting costs almost nothing).
   */
  run(n: number): RunResult {
    this.idleHit = false;
    if (this.radio.hasPending) this.radio.offerPending();
    this.pumpInput();
    // While a boot image is being recorded, the state before each run is the candidate: it is
    // final if something from outside reaches the machine during the run.
    let before: BootImage | null = null;
    if (this.capturing !== null && !this.external) {
      before = this.saveBoot([], this.spareImage);
      this.readsBefore = this.capturing.length;
    }
    const executed = this.cpu.run(n);
    const idle = this.idleHit;
    if (idle && this.clock === 'deterministic') {
      const c = this.cycles;
      this.skipped += LIMITS.instrPerMs - (c % LIMITS.instrPerMs);
    }
    if (this.capturing !== null) this.recordBoot(before);
    return { executed, idle };
  }

  /** Run until pred() holds (checked between slices); false if maxInstructions ran out first. */
  runUntil(pred: () => boolean, opts: { maxInstructions?: number; slice?: number } = {}): boolean {
    const max = opts.maxInstructions ?? 1e9;
    const slice = opts.slice ?? 100_000;
    const start = this.cpu.instructions;
    while (!pred()) {
      if (this.cpu.instructions - start >= max) return false;
      this.run(Math.min(slice, max - (this.cpu.instructions - start)));
    }
    return true;
  }

  /** Run for ms of machine time (deterministic clock) — input keeps being fed meanwhile. */
  runFor(ms: number, maxInstructions = 1e10): void {
    const end = this.timerMs() + ms;
    this.runUntil(() => this.timerMs() >= end, { maxInstructions });
  }

  /** Run until all queued input is consumed and Oberon idles again. */
  runUntilIdle(maxInstructions = 2e9): boolean {
    const start = this.cpu.instructions;
    for (;;) {
      const r = this.run(200_000);
      if (r.idle && this.input.length === 0 && this.keyFifo.length === 0) return true;
      if (this.cpu.instructions - start >= maxInstructions) return false;
    }
  }

  // ---------------------------------------------------------------- the bus

  ioRead(addr: number): number {
    switch (addr - 0xffffffc0) {
      case 0: // ms timer
        this.poll();
        return this.timerMs();
      case 4: // switches
        return this.switches;
      case 8: // RS232 data
        this.markExternal();
        this.activity = true;
        return this.serialReadByte();
      case 12: // RS232 status: bit 0 byte available, bit 1 transmitter ready
        this.markExternal();
        return (this.serialPos < this.serialIn.length ? 1 : 0) | 2;
      case 16: // SPI data
        if (this.spiSel === 1) {
          this.activity = true;
          return this.sd.read();
        }
        if (this.spiSel === 2) {
          this.markExternal();
          return this.radio.read();
        }
        return 255;
      case 20: // SPI status: always ready
        return 1;
      case 24: {
        // mouse and keyboard status
        if (this.inputEver) this.markExternal();
        this.mouseRead();
        let v = this.mouseState;
        if (this.keyFifo.length > 0) v |= 0x10000000;
        else this.poll();
        return v;
      }
      case 28: // PS/2 data
        if (this.inputEver) this.markExternal();
        this.activity = true;
        if (this.keyFifo.length > 0) {
          const b = this.keyFifo.shift() as number;
          if (this.keyFifo.length === 0) this.pumpInput();
          return b;
        }
        return 0;
      case 40: // clipboard control: length of the host text
        this.markExternal();
        this.activity = true;
        this.clipReadPos = 0;
        return this.clipText().length;
      case 44: {
        // clipboard data
        this.markExternal();
        this.activity = true;
        const t = this.clipText();
        if (this.clipReadPos < t.length) {
          const ch = t.charCodeAt(this.clipReadPos++);
          return ch === 10 ? 13 : ch & 0xff;
        }
        return 0;
      }
      default:
        return 0;
    }
  }

  ioWrite(addr: number, value: number): void {
    switch (addr - 0xffffffc0) {
      case 4:
        this.setLeds(value & 0xff);
        return;
      case 8:
        this.markExternal(); // output leaves the machine (and is kept as state)
        this.activity = true;
        this.serialWrite(value & 0xff);
        return;
      case 16:
        if (this.spiSel === 1) {
          this.activity = true;
          this.sd.write(value);
        } else if (this.spiSel === 2) {
          this.markExternal();
          this.radio.write(value, this.spiFast);
        }
        return;
      case 20:
        if ((value & 3) === 2 || (value & 8) !== 0) this.markExternal(); // the radio
        this.spiSel = value & 3;
        this.spiFast = (value & 4) !== 0;
        this.radio.control(value);
        return;
      case 40:
        this.markExternal();
        this.activity = true;
        this.clipOutLen = value;
        this.clipOut = [];
        if (value === 0) this.emitClipboard();
        return;
      case 44:
        this.markExternal();
        this.activity = true;
        if (this.clipOut.length < this.clipOutLen) {
          const b = value & 0xff;
          this.clipOut.push(b === 13 ? 10 : b);
          if (this.clipOut.length === this.clipOutLen) this.emitClipboard();
        }
        return;
      default:
    }
  }

  /** A poll: the timer, or the keyboard status with no key pending. Enough quiet ones = idle. */
  private poll(): void {
    const cpu = this.cpu;
    const now = cpu.ioInstr;
    const fb = cpu.fbVersion;
    if (
      now - this.lastPoll <= LIMITS.idlePollGap &&
      !this.activity &&
      fb === this.lastFb &&
      this.keyFifo.length === 0
    ) {
      if (++this.quietPolls >= LIMITS.idlePolls) {
        this.quietPolls = 0;
        this.booted = true;
        this.leaveVirtualClock();
        // Idle only when no queued input needs feeding right now.
        if (this.input.length === 0 || this.mouseHolding()) {
          this.idleHit = true;
          cpu.stop = true;
        }
      }
    } else this.quietPolls = 0;
    this.lastPoll = now;
    this.lastFb = fb;
    this.activity = false;
  }

  private setLeds(v: number): void {
    this.leds = v;
    this.ledHistory.push(v);
    if (this.ledHistory.length > LIMITS.ledHistoryKeep) this.ledHistory.shift();
    this.onLeds?.(v);
  }

  private serialReadByte(): number {
    return this.serialPos < this.serialIn.length ? this.serialIn[this.serialPos++] : 0;
  }

  private serialWrite(b: number): void {
    this.serialOut.push(b);
    this.serialOutTotal++;
    if (this.serialOut.length > LIMITS.serialOutKeep) this.serialOut.splice(0, this.serialOut.length >> 1);
    this.onSerial?.(b);
  }

  /** Bytes Oberon wrote to RS232 (the most recent ones, up to LIMITS.serialOutKeep). */
  serialOutput(): Uint8Array {
    return Uint8Array.from(this.serialOut);
  }
  serialText(): string {
    return Buffer.from(this.serialOut).toString('latin1');
  }
  /** Append bytes to RS232 receive (after the boot commands). */
  serialFeed(bytes: Uint8Array | string): void {
    const add = typeof bytes === 'string' ? new TextEncoder().encode(bytes) : bytes;
    const rest = this.serialIn.subarray(this.serialPos);
    const next = new Uint8Array(rest.length + add.length);
    next.set(rest);
    next.set(add, rest.length);
    this.serialIn = next;
    this.serialPos = 0;
  }

  private clipText(): string {
    return this.clipboardIn.replace(/\r\n/g, '\n');
  }
  private emitClipboard(): void {
    const text = Buffer.from(this.clipOut).toString('latin1');
    this.clipOut = [];
    this.onClipboard?.(text);
  }

  // ---------------------------------------------------------------- input

  /** Oberon read the mouse register: count it for the held state and maybe move to the next. */
  private mouseRead(): void {
    const head = this.input[0];
    if (head !== undefined && head.kind === 'mouse' && head.applied) {
      head.reads++;
      if (head.reads >= LIMITS.mouseMinReads && this.timerMs() - head.at >= head.holdMs) {
        this.input.shift();
        this.pumpInput();
      }
    } else if (head !== undefined) this.pumpInput();
    // Actions run only here, at a mouse poll with the key FIFO drained: Oberon has handled
    // every key and click before them, so the screen shows their effect.
    let next = this.input[0];
    while (next !== undefined && next.kind === 'action' && this.keyFifo.length === 0) {
      this.input.shift();
      this.input.unshift(...next.run());
      this.pumpInput();
      next = this.input[0];
    }
  }

  private mouseHolding(): boolean {
    const head = this.input[0];
    return head !== undefined && head.kind === 'mouse' && head.applied && head.reads >= LIMITS.mouseMinReads;
  }

  /** Feed the head of the input queue when the keyboard FIFO is empty. */
  private pumpInput(): void {
    while (this.input.length > 0 && this.keyFifo.length === 0) {
      const head = this.input[0];
      if (head.kind === 'keys') {
        this.input.shift();
        for (const b of head.bytes) this.keyFifo.push(b);
        return;
      }
      if (head.kind === 'action') return;
      if (!head.applied) {
        head.applied = true;
        head.at = this.timerMs();
        head.reads = 0;
        if (!head.keep) {
          this.mouseState = (this.mouseState & ~0xffffff) | (head.y << 12) | head.x;
          this.mouseState = (this.mouseState & ~0x07000000) | head.buttons;
        }
      }
      return;
    }
  }

  private enqueue(item: InputItem): void {
    if (this.input.length >= LIMITS.inputQueueItems) {
      throw new Error(
        `input queue full (${LIMITS.inputQueueItems} items): the machine is not consuming input`,
      );
    }
    this.inputEver = true; // from now on keyboard and mouse reads depend on what came in
    this.input.push(item);
    this.pumpInput();
  }

  /** True while queued key strokes or mouse states have not all been consumed by Oberon. */
  get inputPending(): boolean {
    return this.input.length > 0 || this.keyFifo.length > 0;
  }

  ps2(bytes: readonly number[]): void {
    if (bytes.length > LIMITS.keyFifoBytes)
      throw new Error(`a key sequence longer than the ${LIMITS.keyFifoBytes}-byte FIFO`);
    this.enqueue({ kind: 'keys', bytes: bytes.map((b) => b & 0xff) });
  }

  mouse(x: number, y: number, buttons: MouseButtons): void {
    const bits =
      (buttons.left ? BUTTON_BITS.left : 0) |
      (buttons.middle ? BUTTON_BITS.middle : 0) |
      (buttons.right ? BUTTON_BITS.right : 0);
    this.queueMouse(x, y, bits, 0, true);
  }

  private queueMouse(x: number, y: number, buttons: number, holdMs: number, coalesce: boolean): void {
    const cx = Math.min(Math.max(Math.round(x), 0), this.width - 1);
    const cy = Math.min(Math.max(Math.round(y), 0), this.height - 1);
    const last = this.input[this.input.length - 1];
    if (
      coalesce &&
      last !== undefined &&
      last.kind === 'mouse' &&
      !last.applied &&
      last.buttons === buttons
    ) {
      last.x = cx;
      last.y = cy;
      return;
    }
    this.enqueue(mouseItem(cx, cy, buttons, holdMs));
  }

  /** Let holdMs of machine time pass (and Oberon poll a few times) before the next queued input. */
  pause(holdMs: number): void {
    this.enqueue({ ...mouseItem(0, 0, 0, holdMs), keep: true });
  }

  /**
   * Run an Oberon command the way a person does: put the caret at the end of the text of the
   * lowest viewer in the system track (System.Tool after boot), type Return and the command,
   * then middle-click its first letter. The line is found on the screen when it is reached in
   * the input queue, so commands queue up behind earlier input. Each call adds one line.
   */
  runCommand(command: string): void {
    if (/[\r\n]/.test(command)) throw new Error('runCommand takes one line; call it once per command');
    const keys = textToPs2(`\r${command}`); // validate now, not when the queue reaches it
    this.enqueue({
      kind: 'action',
      run: () => {
        const area = this.commandArea();
        const yBelow = Math.min(area.lowest + 8, this.height - 2);
        // Below the last line and far right: Oberon puts the caret at the end of the last line.
        const x = this.width - 12;
        return [
          mouseItem(x, this.screenToOberon(yBelow), 0, 0),
          mouseItem(x, this.screenToOberon(yBelow), BUTTON_BITS.left, LIMITS.clickHoldMs),
          mouseItem(x, this.screenToOberon(yBelow), 0, LIMITS.clickHoldMs),
          // The pointer is drawn into the framebuffer: park it in the user track before scanning.
          mouseItem(8, this.height >> 1, 0, 0),
          ...keys.map((bytes): InputItem => ({ kind: 'keys', bytes })),
          { ...mouseItem(0, 0, 0, LIMITS.clickHoldMs), keep: true },
          {
            kind: 'action',
            run: () => {
              const a = this.commandArea();
              const snap = this.snapshot();
              const x = leftmostInk(snap, a.x0, this.width, a.lowest - 10, a.lowest - 1);
              const px = (x < 0 ? a.x0 : x) + 2;
              const py = this.screenToOberon(a.lowest - 6);
              return [
                mouseItem(px, py, 0, 0),
                mouseItem(px, py, BUTTON_BITS.middle, LIMITS.clickHoldMs),
                mouseItem(px, py, 0, LIMITS.clickHoldMs),
              ];
            },
          },
        ];
      },
    });
  }

  /** The text area of the lowest viewer in the system track, and its lowest inked row. */
  private commandArea(): { x0: number; top: number; lowest: number } {
    const snap = this.snapshot();
    const trackX = Math.floor((this.width * 5) / 8); // Oberon's default system track starts at 5/8
    const x0 = trackX + 20; // right of the viewer's left border and scroll bar
    const bars = titleBars(snap, x0, this.width - 8);
    const top = bars.length > 0 ? bars[bars.length - 1] + 15 : 0;
    const lowest = lowestInkRow(snap, x0, this.width - 8, top, this.height);
    return { x0, top, lowest: lowest < 0 ? top + 12 : lowest };
  }

  /** Type a text (US keyboard; '\n' is Return). Throws on characters without a key. */
  typeText(text: string): void {
    for (const seq of textToPs2(text)) this.enqueue({ kind: 'keys', bytes: seq });
  }

  /** Move the mouse (Oberon coordinates) with the given buttons held. */
  moveMouse(x: number, y: number, buttons: readonly ButtonName[] = []): void {
    let bits = 0;
    for (const b of buttons) bits |= BUTTON_BITS[b];
    this.queueMouse(x, y, bits, 0, false);
  }

  /** Press and release a button at (x, y) in Oberon coordinates (y from the bottom). */
  click(x: number, y: number, button: ButtonName = 'left', holdMs: number = LIMITS.clickHoldMs): void {
    const bits = BUTTON_BITS[button];
    this.queueMouse(x, y, 0, 0, false);
    this.queueMouse(x, y, bits, holdMs, false);
    this.queueMouse(x, y, 0, holdMs, false);
  }

  /** Convert a y measured from the top of the screen (PNG, VNC) to Oberon's y (from the bottom). */
  screenToOberon(yFromTop: number): number {
    return this.height - 1 - yFromTop;
  }

  // ---------------------------------------------------------------- screen

  snapshot(): FrameSnapshot {
    const start = this.displayStart >>> 2;
    const n = (this.width / 32) * this.height;
    const words = new Uint32Array(n);
    words.set(new Uint32Array(this.cpu.mem.buffer, this.cpu.mem.byteOffset + start * 4, n));
    return { width: this.width, height: this.height, words, version: this.cpu.fbVersion };
  }

  /** One pixel (x from the left, y from the TOP as in a picture): 1 = foreground. */
  pixel(x: number, yFromTop: number): number {
    const line = this.height - 1 - yFromTop;
    const w = this.cpu.mem[(this.displayStart >>> 2) + line * (this.width / 32) + (x >>> 5)];
    return (w >>> (x & 31)) & 1;
  }

  /** Stats for monitoring. */
  stats(): {
    instructions: number;
    cycles: number;
    timerMs: number;
    leds: number;
    serialOutBytes: number;
    diskWrites: number;
    radio: Nrf24['stats'];
    voidFetches: number;
  } {
    return {
      instructions: this.cpu.instructions,
      cycles: this.cycles,
      timerMs: this.timerMs(),
      leds: this.leds,
      serialOutBytes: this.serialOutTotal,
      diskWrites: this.disk.writes,
      radio: { ...this.radio.stats },
      voidFetches: this.voidFetches,
    };
  }
}
