// The machine's limits, options and result types (machine.ts re-exports them): one place for the
// board's constants and the host-side bounds, shared by the machine's parts.

import type { BootImage } from './boot-image.ts';
import type { AirPort } from './nrf24.ts';
import type { DiskImage } from './sd-card.ts';

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

/** The boot ROM's first word: a fetch there with no ROM installed is the native boot. */
export const ROM_START_WORD = 0xfffff800 >>> 2;

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

/**
 * The boot commands with their last line ended (";"). Boot.Run ends the last line when the port
 * stays quiet for 20 ms, so a command fed later (serialFeed) while a slow machine has not yet read
 * them would otherwise join it: "Kube.Start" + "KubeNet.Serve …;" ran as one unknown command, and
 * neither ran (the DR suite's plane restart under heavy load).
 */
export function endCommands(commands: string): string {
  return commands === '' || /[;\r\n]\s*$/.test(commands) ? commands : `${commands};`;
}
