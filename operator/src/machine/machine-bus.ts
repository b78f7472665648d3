// The machine's device side: the registers at the top of the address space (timer, switches,
// LEDs, RS232, SPI with the SD card and the radio, PS/2 keyboard and mouse, the clipboard) and the
// idle detection that watches Oberon poll them. machine.ts (Machine) builds on it and adds power,
// boot, time and running; the state here is what a boot image keeps of the devices.

import type { BootImage } from './boot-image.ts';
import type { Risc5 } from './cpu.ts';
import { LIMITS } from './machine-config.ts';
import type { InputQueue } from './machine-input.ts';
import { Nrf24 } from './nrf24.ts';
import { type DiskImage, SdCard } from './sd-card.ts';

export abstract class MachineBus {
  abstract readonly cpu: Risc5;
  protected abstract readonly input: InputQueue;
  readonly disk: DiskImage;
  readonly sd: SdCard;
  readonly radio = new Nrf24();
  switches: number;

  protected spiSel = 0;
  protected spiFast = false;
  protected serialIn: Uint8Array = new Uint8Array(0);
  protected serialPos = 0;
  private serialOut: number[] = [];
  protected serialOutTotal = 0;
  leds = 0;
  readonly ledHistory: number[] = [];
  clipboardIn = '';
  private clipReadPos = 0;
  private clipOutLen = 0;
  private clipOut: number[] = [];
  /** Called with each text Oberon puts on the clipboard. */
  onClipboard: ((text: string) => void) | null = null;
  /** Called with each byte Oberon writes to RS232. */
  onSerial: ((byte: number) => void) | null = null;
  onLeds: ((value: number) => void) | null = null;

  // Idleness.
  protected lastPoll = 0;
  protected quietPolls = 0;
  protected activity = false;
  protected lastFb = 0;
  protected idleHit = false;
  /** Times the CPU fetched outside RAM/ROM (each one resets the machine, as on the board). */
  voidFetches = 0;
  /** True once Oberon's main loop has run idle at least once since power-on. */
  booted = false;

  constructor(disk: DiskImage, switches: number) {
    this.disk = disk;
    this.sd = new SdCard(disk);
    this.switches = switches;
  }

  /** The millisecond counter Oberon reads at −64. */
  abstract timerMs(): number;
  /** Something from outside reached the machine: its state is no longer a function of the disk alone. */
  protected abstract markExternal(): void;
  /** The timer follows the wall clock from here on (Oberon idled: the boot is over). */
  protected abstract leaveVirtualClock(): void;

  /** The device state a boot image keeps. */
  protected saveDevices(): BootImage['devices'] {
    return {
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
    };
  }

  protected loadDevices(d: BootImage['devices']): void {
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
  }

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
        if (this.input.ever) this.markExternal();
        this.input.mouseRead();
        let v = this.input.mouseState;
        if (this.input.keyFifo.length > 0) v |= 0x10000000;
        else this.poll();
        return v;
      }
      case 28: // PS/2 data
        if (this.input.ever) this.markExternal();
        this.activity = true;
        if (this.input.keyFifo.length > 0) {
          const b = this.input.keyFifo.shift() as number;
          if (this.input.keyFifo.length === 0) this.input.pump();
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
  protected poll(): void {
    const cpu = this.cpu;
    const now = cpu.ioInstr;
    const fb = cpu.fbVersion;
    if (
      now - this.lastPoll <= LIMITS.idlePollGap &&
      !this.activity &&
      fb === this.lastFb &&
      this.input.keyFifo.length === 0
    ) {
      if (++this.quietPolls >= LIMITS.idlePolls) {
        this.quietPolls = 0;
        this.booted = true;
        this.leaveVirtualClock();
        // Idle only when no queued input needs feeding right now.
        if (this.input.items.length === 0 || this.input.holding()) {
          this.idleHit = true;
          cpu.stop = true;
        }
      }
    } else this.quietPolls = 0;
    this.lastPoll = now;
    this.lastFb = fb;
    this.activity = false;
  }

  protected setLeds(v: number): void {
    this.leds = v;
    this.ledHistory.push(v);
    if (this.ledHistory.length > LIMITS.ledHistoryKeep) this.ledHistory.shift();
    this.onLeds?.(v);
  }

  protected serialReadByte(): number {
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
}
