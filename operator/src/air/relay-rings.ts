// What the relay's thread and its send thread share: one SharedArrayBuffer holding two
// single-producer single-consumer rings and a few counters. No message is posted per frame (a
// postMessage clones and wakes a loop: more than the sends it would carry).
//  - jobs (relay → send thread): a frame and the IPv4 stations the send thread hands it to;
//  - inbound (send thread → relay): datagrams the kernel gave the send thread's socket (it shares
//    the relay's port, SO_REUSEPORT, so the kernel spreads stations over both sockets by address).
// Each ring has a head (written by its producer only) and a tail (by its consumer only); both only
// grow, wrapping as 32-bit integers, so head - tail is the fill even across the wrap.
import { LIMITS as WIRE } from './wire.ts';

export const RING = {
  /**
   * Jobs the send thread may have pending. Small on purpose: a job waiting here is a frame
   * waiting, and when the ring is full the relay sends the frame itself. With a core, what it holds
   * is ~2 ms of sending (64 jobs of 10 sends); a send thread waiting for a core delays what it holds
   * as the relay's own thread waiting for one delays the kernel queue: that wait no queue bounds
   * (RELAY_LIMITS.QUEUE_MS), and dropping jobs for it lost 93-150 of 1,200 frames of a steady
   * 400 frames/s at load 15 (bench/air --compare) where the reference lost none.
   */
  JOBS: 64,
  /** Stations one job names; a frame to more takes several jobs. */
  JOB_RECEIVERS: 32,
  /**
   * Datagrams the send thread may have handed over and the relay not yet taken; beyond, it drops
   * them (counted as queue drops), as a full kernel queue would. Its socket's kernel queue in front
   * holds the delay bound's share already; this only smooths the handover: a burst of one frame per
   * station of the largest air (21) fits.
   */
  INBOUND: 32,
  /**
   * The share of a frame's deliveries the send thread makes moves by this step at each of the
   * relay's timings (RELAY_LIMITS.QUEUE_MEASURE_MS), towards the thread that was less busy: the
   * relay's thread receives and judges every frame, the send thread receives what the kernel gives
   * its socket, and which of them has more to do depends on where the traffic lands.
   */
  SHARE_STEP: 0.1,
  /** Busy shares (0..1) closer than this are even: the share stays. */
  SHARE_DEADBAND: 0.05,
  /** The relay's thread always makes some deliveries itself, so a send thread without a core delays few. */
  SHARE_MAX: 0.9,
  SHARE_MIN: 0.1,
} as const;

/** Int32 words of the control block. */
export const CTL = {
  JOB_HEAD: 0,
  JOB_TAIL: 1,
  IN_HEAD: 2,
  IN_TAIL: 3,
  /** The kernel queue (datagrams) the relay asks of the send thread's socket too. */
  QUEUE_FRAMES: 4,
  /** 1 once the relay closes. */
  CLOSING: 5,
  /** The send thread's busy time (ms, its event loop's, wrapping at 2^32). */
  BUSY_MS: 10,
  /** The send thread's counters, each wrapping at 2^32 (the relay folds in their differences). */
  SENT: 6,
  LATE: 7,
  SEND_ERRORS: 8,
  INBOUND_DROPPED: 9,
  WORDS: 16,
} as const;

/** Job slot: frame, receiver count, then 6 bytes per receiver (IPv4 address, port; big-endian). */
const JOB_FRAME = 0;
const JOB_COUNT = WIRE.DATAGRAM_BYTES;
const JOB_RX = JOB_COUNT + 1;
const JOB_BYTES = JOB_RX + 6 * RING.JOB_RECEIVERS;
/** Inbound slot: length (a datagram longer than a frame is kept as its length only), address, port, bytes. */
const IN_LEN = 0;
const IN_IP = 2;
const IN_PORT = 6;
const IN_DATA = 8;
const IN_BYTES = IN_DATA + WIRE.DATAGRAM_BYTES;

export interface Rings {
  sab: SharedArrayBuffer;
  ctl: Int32Array;
  jobs: Uint8Array;
  inbound: Uint8Array;
}

export function createRings(): SharedArrayBuffer {
  return new SharedArrayBuffer(CTL.WORDS * 4 + RING.JOBS * JOB_BYTES + RING.INBOUND * IN_BYTES);
}

export function openRings(sab: SharedArrayBuffer): Rings {
  const ctl = new Int32Array(sab, 0, CTL.WORDS);
  const jobs = new Uint8Array(sab, CTL.WORDS * 4, RING.JOBS * JOB_BYTES);
  const inbound = new Uint8Array(sab, jobs.byteOffset + jobs.byteLength, RING.INBOUND * IN_BYTES);
  return { sab, ctl, jobs, inbound };
}

/** An IPv4 literal as a 32-bit number; -1 for anything else. */
export function ip4Number(host: string): number {
  const p = host.split('.');
  if (p.length !== 4) return -1;
  let n = 0;
  for (const x of p) {
    const b = Number(x);
    if (!Number.isInteger(b) || b < 0 || b > 255 || x === '') return -1;
    n = n * 256 + b;
  }
  return n;
}

export const ip4Text = (n: number): string => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

/** The relay's side of the job ring: fill one job at a time, then publish it. */
export class JobWriter {
  private head = 0;
  private slot = 0;
  private count = 0;
  /** The share of deliveries handed to the send thread (set by relay-thread.ts), and its running sum. */
  share = 0.5;
  private owed = 0;
  private readonly r: Rings;
  constructor(r: Rings) {
    this.r = r;
  }

  /** Starts a job for `frame` if the send thread has room; false if not (the relay sends it all itself). */
  begin(frame: Uint8Array): boolean {
    this.head = Atomics.load(this.r.ctl, CTL.JOB_HEAD);
    if (((this.head - Atomics.load(this.r.ctl, CTL.JOB_TAIL)) | 0) >= RING.JOBS) return false;
    this.slot = (this.head & (RING.JOBS - 1)) * JOB_BYTES;
    this.r.jobs.set(frame, this.slot + JOB_FRAME);
    this.count = 0;
    return true;
  }

  /** Whether the next delivery is the send thread's, keeping to its share. */
  take(): boolean {
    this.owed += this.share;
    if (this.owed < 1) return false;
    this.owed -= 1;
    return true;
  }

  /** Adds a station; false once the job is full. */
  add(ip: number, port: number): boolean {
    if (this.count >= RING.JOB_RECEIVERS) return false;
    const o = this.slot + JOB_RX + 6 * this.count++;
    const j = this.r.jobs;
    j[o] = ip >>> 24;
    j[o + 1] = ip >>> 16;
    j[o + 2] = ip >>> 8;
    j[o + 3] = ip;
    j[o + 4] = port >>> 8;
    j[o + 5] = port;
    return true;
  }

  /** Publishes the job (if it names anyone) and wakes the send thread if it waits. */
  commit(): void {
    if (this.count === 0) return;
    this.r.jobs[this.slot + JOB_COUNT] = this.count;
    Atomics.store(this.r.ctl, CTL.JOB_HEAD, (this.head + 1) | 0);
    Atomics.notify(this.r.ctl, CTL.JOB_HEAD);
  }
}

/** One job as the send thread reads it (valid until the next `next`). */
export interface Job {
  frame: Uint8Array;
  count: number;
  ip(i: number): number;
  port(i: number): number;
}

/** The send thread's side of the job ring. */
export class JobReader implements Job {
  frame: Uint8Array = new Uint8Array(0);
  count = 0;
  private slot = 0;
  private tail = 0;
  private readonly r: Rings;
  constructor(r: Rings) {
    this.r = r;
  }

  /** Jobs waiting. */
  pending(): number {
    return (Atomics.load(this.r.ctl, CTL.JOB_HEAD) - this.tail) | 0;
  }

  /** Reads the oldest job (call only while pending() > 0); `done` frees its slot. */
  next(): Job {
    const i = this.tail & (RING.JOBS - 1);
    this.slot = i * JOB_BYTES;
    this.frame = this.r.jobs.subarray(this.slot + JOB_FRAME, this.slot + JOB_FRAME + WIRE.DATAGRAM_BYTES);
    this.count = this.r.jobs[this.slot + JOB_COUNT] ?? 0;
    return this;
  }

  ip(k: number): number {
    const j = this.r.jobs;
    const o = this.slot + JOB_RX + 6 * k;
    return (((j[o] ?? 0) << 24) | ((j[o + 1] ?? 0) << 16) | ((j[o + 2] ?? 0) << 8) | (j[o + 3] ?? 0)) >>> 0;
  }

  port(k: number): number {
    const o = this.slot + JOB_RX + 6 * k + 4;
    return ((this.r.jobs[o] ?? 0) << 8) | (this.r.jobs[o + 1] ?? 0);
  }

  done(): void {
    this.tail = (this.tail + 1) | 0;
    Atomics.store(this.r.ctl, CTL.JOB_TAIL, this.tail);
  }

  /** Resolves when a job is queued or the relay closes (at once if one is). */
  async wait(): Promise<void> {
    const head = Atomics.load(this.r.ctl, CTL.JOB_HEAD);
    if (head !== this.tail || Atomics.load(this.r.ctl, CTL.CLOSING)) return;
    const w = Atomics.waitAsync(this.r.ctl, CTL.JOB_HEAD, head);
    if (w.async) await w.value;
  }
}

/** The send thread hands a datagram it received to the relay; false if the ring is full (dropped). */
export function pushInbound(r: Rings, msg: Uint8Array, ip: number, port: number): boolean {
  const head = Atomics.load(r.ctl, CTL.IN_HEAD);
  if (((head - Atomics.load(r.ctl, CTL.IN_TAIL)) | 0) >= RING.INBOUND) return false;
  const o = (head & (RING.INBOUND - 1)) * IN_BYTES;
  const b = r.inbound;
  const len = Math.min(msg.length, 0xffff);
  b[o + IN_LEN] = len >>> 8;
  b[o + IN_LEN + 1] = len;
  b[o + IN_IP] = ip >>> 24;
  b[o + IN_IP + 1] = ip >>> 16;
  b[o + IN_IP + 2] = ip >>> 8;
  b[o + IN_IP + 3] = ip;
  b[o + IN_PORT] = port >>> 8;
  b[o + IN_PORT + 1] = port;
  if (len <= WIRE.DATAGRAM_BYTES) b.set(msg, o + IN_DATA);
  Atomics.store(r.ctl, CTL.IN_HEAD, (head + 1) | 0);
  Atomics.notify(r.ctl, CTL.IN_HEAD);
  return true;
}

/**
 * The relay's side of the inbound ring: calls `handle` for every datagram, in order, until the
 * relay closes. A datagram longer than a frame comes as zeros of its length (it is only counted).
 */
export async function drainInbound(
  r: Rings,
  handle: (msg: Buffer, ip: number, port: number) => void,
): Promise<void> {
  let tail = Atomics.load(r.ctl, CTL.IN_TAIL);
  const b = r.inbound;
  while (!Atomics.load(r.ctl, CTL.CLOSING)) {
    const head = Atomics.load(r.ctl, CTL.IN_HEAD);
    if (head === tail) {
      const w = Atomics.waitAsync(r.ctl, CTL.IN_HEAD, head);
      if (w.async) await w.value;
      continue;
    }
    while (tail !== head) {
      const o = (tail & (RING.INBOUND - 1)) * IN_BYTES;
      const len = (((b[o + IN_LEN] ?? 0) << 8) | (b[o + IN_LEN + 1] ?? 0)) >>> 0;
      // a copy: the relay may hand it to a send that completes after this slot is reused
      const msg =
        len <= WIRE.DATAGRAM_BYTES
          ? Buffer.from(b.subarray(o + IN_DATA, o + IN_DATA + len))
          : Buffer.alloc(len);
      const ip =
        (((b[o + IN_IP] ?? 0) << 24) |
          ((b[o + IN_IP + 1] ?? 0) << 16) |
          ((b[o + IN_IP + 2] ?? 0) << 8) |
          (b[o + IN_IP + 3] ?? 0)) >>>
        0;
      const port = ((b[o + IN_PORT] ?? 0) << 8) | (b[o + IN_PORT + 1] ?? 0);
      tail = (tail + 1) | 0;
      Atomics.store(r.ctl, CTL.IN_TAIL, tail);
      handle(msg, ip, port);
    }
  }
}
