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
//
// The parts: machine-config.ts (limits, options), machine-bus.ts (the devices and idle detection),
// machine-input.ts (the input queue and runCommand's steps); here power, boot, time and running.

import { type BootImage, blocksData, fnv64, LIMITS as IMAGE_LIMITS, sameBlocks } from './boot-image.ts';
import { bootRom } from './boot-rom.ts';
import { type IoBus, Risc5 } from './cpu.ts';
import type { FixedReads } from './jit.ts';
import { MachineBus } from './machine-bus.ts';
import {
  type ClockMode,
  endCommands,
  LIMITS,
  type MachineOptions,
  ROM_START_WORD,
  type RunResult,
} from './machine-config.ts';
import { BUTTON_BITS, type ButtonName, commandAction, InputQueue, mouseItem } from './machine-input.ts';
import type { Nrf24 } from './nrf24.ts';
import { findTaskRing, nextTaskDue, type TaskRing } from './oberon-tasks.ts';
import { textToPs2 } from './ps2.ts';
import type { FrameSnapshot, MachineInput, MachineScreen, MouseButtons } from './screen-input.ts';
import { DiskImage } from './sd-card.ts';

export {
  type ClockMode,
  endCommands,
  LIMITS,
  type MachineOptions,
  type RunResult,
} from './machine-config.ts';
export type { ButtonName } from './machine-input.ts';

export class Machine extends MachineBus implements MachineScreen, MachineInput, IoBus {
  /** The SPI status reads "ready" always and has no effect (see ioRead): translated code inlines it. */
  readonly fixedReads: FixedReads = [[0xffffffd4 | 0, 1]];
  readonly cpu: Risc5;
  readonly clock: ClockMode;
  readonly memBytes: number;
  readonly displayStart: number;
  readonly width: number;
  readonly height: number;
  readonly customDisplay: boolean;
  readonly memLim: number;
  readonly stackOrg: number;
  commands: string;
  protected readonly input: InputQueue;

  // Time.
  private readonly hostNow: () => number;
  private wallStart = 0;
  /** Virtual instructions skipped while idle (deterministic clock). */
  private skipped = 0;
  private readonly imageCandidates: readonly BootImage[] | null;
  /** Real-time clock still on machine time (the boot is still a function of disk and configuration). */
  private virtualClock = false;
  /** Something from outside (serial, radio, clipboard, input) reached the machine since power-on. */
  private external = false;
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
    super(opts.disk instanceof DiskImage ? opts.disk : new DiskImage(opts.disk), opts.switches ?? 0);
    this.clock = opts.clock ?? 'realtime';
    this.hostNow = opts.now ?? (() => performance.now());
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
    this.input = new InputQueue(() => this.timerMs(), this.width, this.height);
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
    this.input.clear();
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
      devices: this.saveDevices(),
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
        input: [this.input.items.length, this.input.keyFifo.length, this.input.mouseState],
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
    this.loadDevices(image.devices);
    if (this.booted) this.leaveVirtualClock();
    return true;
  }

  /** The timer follows the wall clock from here on, continuing from the machine time reached. */
  protected leaveVirtualClock(): void {
    if (!this.virtualClock) return;
    const t = this.timerMs();
    this.virtualClock = false;
    this.wallStart = this.hostNow() - t;
  }

  /** Something from outside reached the machine: its state is no longer a function of the disk alone. */
  protected markExternal(): void {
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
    this.input.pump();
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
      if (r.idle && !this.input.pending) return true;
      if (this.cpu.instructions - start >= maxInstructions) return false;
    }
  }

  // ---------------------------------------------------------------- input

  /** True while queued key strokes or mouse states have not all been consumed by Oberon. */
  get inputPending(): boolean {
    return this.input.pending;
  }

  ps2(bytes: readonly number[]): void {
    if (bytes.length > LIMITS.keyFifoBytes)
      throw new Error(`a key sequence longer than the ${LIMITS.keyFifoBytes}-byte FIFO`);
    this.input.enqueue({ kind: 'keys', bytes: bytes.map((b) => b & 0xff) });
  }

  mouse(x: number, y: number, buttons: MouseButtons): void {
    const bits =
      (buttons.left ? BUTTON_BITS.left : 0) |
      (buttons.middle ? BUTTON_BITS.middle : 0) |
      (buttons.right ? BUTTON_BITS.right : 0);
    this.input.queueMouse(x, y, bits, 0, true);
  }

  /** Let holdMs of machine time pass (and Oberon poll a few times) before the next queued input. */
  pause(holdMs: number): void {
    this.input.enqueue({ ...mouseItem(0, 0, 0, holdMs), keep: true });
  }

  /**
   * Run an Oberon command the way a person does: put the caret at the end of the text of the
   * lowest viewer in the system track (System.Tool after boot), type Return and the command,
   * then middle-click its first letter. The line is found on the screen when it is reached in
   * the input queue, so commands queue up behind earlier input. Each call adds one line.
   */
  runCommand(command: string): void {
    this.input.enqueue(commandAction(command, this));
  }

  /** Type a text (US keyboard; '\n' is Return). Throws on characters without a key. */
  typeText(text: string): void {
    for (const seq of textToPs2(text)) this.input.enqueue({ kind: 'keys', bytes: seq });
  }

  /** Move the mouse (Oberon coordinates) with the given buttons held. */
  moveMouse(x: number, y: number, buttons: readonly ButtonName[] = []): void {
    let bits = 0;
    for (const b of buttons) bits |= BUTTON_BITS[b];
    this.input.queueMouse(x, y, bits, 0, false);
  }

  /** Press and release a button at (x, y) in Oberon coordinates (y from the bottom). */
  click(x: number, y: number, button: ButtonName = 'left', holdMs: number = LIMITS.clickHoldMs): void {
    const bits = BUTTON_BITS[button];
    this.input.queueMouse(x, y, 0, 0, false);
    this.input.queueMouse(x, y, bits, holdMs, false);
    this.input.queueMouse(x, y, 0, holdMs, false);
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
