// The nRF24L01+ radio on SPI device 2 (spiCtrl bit 1 selects it, bit 3 drives CE), as
// Project Oberon's SCC module drives it. Frames are 32 bytes; RX and TX queues hold 3 each.
// A command starts when the radio becomes selected; its first byte answers with STATUS.
// Transmission happens on a rising CE edge in TX mode (PWR_UP set, PRIM_RX clear): every
// queued payload leaves through the air port and sets TX_DS (no air port: MAX_RT instead).
// Reception: a frame is accepted when its channel equals RF_CH, the radio listens (CE high,
// PWR_UP, PRIM_RX) and the RX queue has room; then RX_DR is set.
//
// Better than the reference: frames that arrive from the host while the radio is momentarily
// not listening (Oberon drops CE for every SPI command) wait in a short host-side queue and are
// offered again as soon as it listens, instead of being lost at an emulation slice boundary.

export const LIMITS = {
  frameBytes: 32, // nRF24L01+ maximum payload, the air's frame size
  fifoDepth: 3, // RX and TX queues in the chip
  pendingFrames: 16, // host-side frames waiting for the radio to listen (bounded, oldest dropped)
  pendingMaxAgeMs: 250, // a waiting frame older than this is lost, as on the real air
} as const;

export const REG = {
  CONFIG: 0x00,
  RF_CH: 0x05,
  RF_SETUP: 0x06,
  STATUS: 0x07,
  RX_PW_P0: 0x11,
  FIFO_STATUS: 0x17,
} as const;

const RX_DR = 0x40;
const TX_DS = 0x20;
const MAX_RT = 0x10;

/** Where transmitted frames go (the UDP air, or a test double). */
export interface AirPort {
  send(channel: number, payload: Uint8Array): void;
}

interface Pending {
  channel: number;
  payload: Uint8Array;
  at: number;
}

export class Nrf24 {
  readonly regs = new Uint8Array(0x20);
  private readonly rxq: Uint8Array[] = [];
  private readonly txq: Uint8Array[] = [];
  private readonly pending: Pending[] = [];
  air: AirPort | null = null;
  /** Host time source for the pending queue's age limit (ms). */
  now: () => number = () => 0;
  private selected = false;
  private ce = false;
  private cmd = -1;
  private pos = 0;
  private reply = 0;
  private txBuf = new Uint8Array(LIMITS.frameBytes);
  private rxReadFrame: Uint8Array | null = null;
  stats = { sent: 0, received: 0, dropped: 0 };
  /** Called with each frame Oberon reads out of the RX queue: tests judge what a machine heard, and when. */
  onRead: ((channel: number, payload: Uint8Array) => void) | null = null;

  constructor() {
    this.reset();
  }

  reset(): void {
    this.regs.fill(0);
    this.regs[REG.CONFIG] = 0x08;
    this.regs[REG.RF_CH] = 2;
    this.regs[REG.RF_SETUP] = 0x0f;
    this.regs[REG.STATUS] = 0x0e;
    this.rxq.length = 0;
    this.txq.length = 0;
    this.pending.length = 0;
    this.selected = false;
    this.ce = false;
    this.cmd = -1;
  }

  get listening(): boolean {
    const c = this.regs[REG.CONFIG];
    return this.ce && (c & 2) !== 0 && (c & 1) !== 0;
  }

  status(): number {
    let s = this.regs[REG.STATUS] & (RX_DR | TX_DS | MAX_RT);
    s |= this.rxq.length > 0 ? 0 : 0x0e;
    if (this.txq.length >= LIMITS.fifoDepth) s |= 1;
    return s;
  }

  private fifoStatus(): number {
    let f = 0;
    if (this.rxq.length === 0) f |= 0x01;
    if (this.rxq.length >= LIMITS.fifoDepth) f |= 0x02;
    if (this.txq.length === 0) f |= 0x10;
    if (this.txq.length >= LIMITS.fifoDepth) f |= 0x20;
    return f;
  }

  /** spiCtrl write: chip select (device 2) and CE (bit 3). */
  control(value: number): void {
    const sel = (value & 3) === 2;
    const ce = (value & 8) !== 0;
    if (sel && !this.selected) {
      this.cmd = -1;
      this.pos = 0;
    } else if (!sel && this.selected) this.endCommand();
    this.selected = sel;
    const rising = ce && !this.ce;
    this.ce = ce;
    if (rising) {
      const c = this.regs[REG.CONFIG];
      if ((c & 2) !== 0 && (c & 1) === 0) this.transmit();
    }
    if (this.pending.length > 0 && this.listening) this.offerPending();
  }

  /** An SPI data write while selected: one byte, or four (LSB first) in fast mode. */
  write(value: number, fast: boolean): void {
    if (!this.selected) return;
    if (!fast) {
      this.reply = this.byte(value & 0xff);
      return;
    }
    let r = 0;
    for (let i = 0; i < 4; i++) r |= this.byte((value >>> (8 * i)) & 0xff) << (8 * i);
    this.reply = r;
  }

  read(): number {
    return this.reply;
  }

  private byte(b: number): number {
    if (this.cmd < 0) {
      this.cmd = b;
      this.pos = 0;
      const st = this.status();
      if (b === 0xe1) this.txq.length = 0;
      else if (b === 0xe2) this.rxq.length = 0;
      else if (b === 0x61) this.rxReadFrame = this.rxq[0] ?? null;
      else if (b === 0xa0) this.txBuf = new Uint8Array(LIMITS.frameBytes);
      return st;
    }
    const cmd = this.cmd;
    const p = this.pos++;
    if (cmd < 0x20) {
      const r = cmd & 0x1f;
      if (r === REG.STATUS) return this.status();
      if (r === REG.FIFO_STATUS) return this.fifoStatus();
      return this.regs[r] ?? 0;
    }
    if (cmd < 0x40) {
      if (p === 0) this.writeReg(cmd & 0x1f, b);
      return 0;
    }
    if (cmd === 0x61) {
      const f = this.rxReadFrame;
      return f !== null && p < LIMITS.frameBytes ? f[p] : 0;
    }
    if (cmd === 0xa0) {
      if (p < LIMITS.frameBytes) this.txBuf[p] = b;
      return 0;
    }
    return 0;
  }

  private writeReg(r: number, b: number): void {
    if (r === REG.STATUS) {
      this.regs[REG.STATUS] &= ~(b & (RX_DR | TX_DS | MAX_RT));
      return;
    }
    if (r === REG.FIFO_STATUS) return;
    this.regs[r] = b;
  }

  private endCommand(): void {
    if (this.cmd === 0x61 && this.rxReadFrame !== null && this.pos > 0) {
      this.rxq.shift();
      this.onRead?.(this.regs[REG.RF_CH], this.rxReadFrame);
      this.rxReadFrame = null;
    } else if (this.cmd === 0xa0 && this.pos > 0 && this.txq.length < LIMITS.fifoDepth) {
      this.txq.push(this.txBuf);
    }
    this.cmd = -1;
    this.pos = 0;
  }

  private transmit(): void {
    if (this.txq.length === 0) return;
    if (this.air === null) {
      this.regs[REG.STATUS] |= MAX_RT;
      return;
    }
    const ch = this.regs[REG.RF_CH];
    while (this.txq.length > 0) {
      const f = this.txq.shift() as Uint8Array;
      this.air.send(ch, f);
      this.stats.sent++;
      this.regs[REG.STATUS] |= TX_DS;
    }
  }

  /** A frame from the air (channel byte + 32-byte payload). */
  receive(channel: number, payload: Uint8Array): void {
    if (payload.length !== LIMITS.frameBytes) return;
    if (this.listening && this.accept(channel, payload)) return;
    if (this.pending.length >= LIMITS.pendingFrames) {
      this.pending.shift();
      this.stats.dropped++;
    }
    this.pending.push({ channel, payload, at: this.now() });
  }

  /** Accept now if the channel matches and there is room; false means "keep it pending". */
  private accept(channel: number, payload: Uint8Array): boolean {
    if (channel !== this.regs[REG.RF_CH]) {
      this.stats.dropped++;
      return true; // another channel: never for us, gone
    }
    if (this.rxq.length >= LIMITS.fifoDepth) return false;
    this.rxq.push(payload);
    this.regs[REG.STATUS] |= RX_DR;
    this.stats.received++;
    return true;
  }

  /** Offer waiting frames (called when the radio starts listening and between slices). */
  offerPending(): void {
    const now = this.now();
    while (this.pending.length > 0) {
      const p = this.pending[0];
      if (now - p.at > LIMITS.pendingMaxAgeMs) {
        this.pending.shift();
        this.stats.dropped++;
        continue;
      }
      if (!this.listening || !this.accept(p.channel, p.payload)) return;
      this.pending.shift();
    }
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Frames received and not yet read by Oberon (in the chip's RX queue or waiting for it). */
  get framesWaiting(): boolean {
    return this.rxq.length > 0 || this.pending.length > 0;
  }
}
