// The kernel queue in front of the relay, kept short enough that no frame waits past MAX_DELAY_MS. Radio
// does not queue: a frame the air cannot carry now is lost. A UDP socket queues whatever its
// receive buffer holds, and with a buffer of megabytes a flood waits seconds in it (#32). So the
// relay asks for a buffer of as many datagrams as it forwards in QUEUE_MS, timed while it works
// (a frame to 20 stations costs 20 sends; to 2, two), and the kernel drops the rest on arrival, for
// free, counting them per socket (/proc/net/udp "drops"), read here for the metrics.
import type dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export const QUEUE_LIMITS = {
  /** The longest a frame may wait for the relay: one SCC send (Wait, 50 ms) — later, radio would have lost it. */
  MAX_DELAY_MS: 50,
  /**
   * What the queue holds, in the relay's time: half the bound. The other half is for waits no
   * buffer size governs: the relay's thread, or a receiver's, waiting for a core on a busy host.
   */
  QUEUE_MS: 25,
  /**
   * The queue never holds fewer datagrams: a real air of 21 stations at 20 frames/s sends ~420/s,
   * so 64 ride out a 150-ms hiccup of the relay's thread (a GC, a busy `up` process) unharmed.
   */
  MIN_FRAMES: 64,
  /** Before anything is measured: QUEUE_MS of ~4,000 frames/s, what one relay thread forwards to 20 stations (bench/air). */
  INITIAL_FRAMES: 100,
  /** A relay with few stations forwards ~100,000 frames/s; QUEUE_MS of that, and no more memory. */
  MAX_FRAMES: 4096,
  /**
   * Kernel bytes one 33-byte datagram takes of the receive buffer (its skb's truesize: 832 on
   * Linux loopback, measured; a NIC's may be larger, which only shortens the queue).
   */
  DATAGRAM_TRUESIZE: 832,
  /** How often the relay's speed is measured, while frames flow. */
  MEASURE_MS: 250,
  /** Frames a measurement needs: fewer say more about the loop's idle wake-ups than its speed. */
  MIN_SAMPLE_FRAMES: 200,
  /**
   * The queue shrinks at once when the relay measures itself slower, and grows at most by this
   * factor per measurement: speed swings (frames a rate ceiling drops cost nothing, frames it passes
   * cost a send per station; the host takes the core away), and a queue grown on one fast
   * measurement would hold frames past the bound until the next.
   */
  MAX_GROWTH: 1.25,
} as const;

/** Bytes to ask for so the kernel holds `frames` datagrams (Linux doubles what it is given). */
export const bufferBytesFor = (frames: number): number =>
  Math.ceil((frames * QUEUE_LIMITS.DATAGRAM_TRUESIZE) / 2);

const clampFrames = (n: number): number =>
  Math.max(QUEUE_LIMITS.MIN_FRAMES, Math.min(QUEUE_LIMITS.MAX_FRAMES, Math.round(n)));

/**
 * Datagrams of QUEUE_MS: frames handled per ms of the loop's busy time. Busy time is wall time
 * while the thread works, so a relay sharing its core (or its loop) measures itself slower and
 * holds fewer: the bound is kept in time, not in frames.
 */
export const framesForDelay = (frames: number, busyMs: number): number =>
  clampFrames(busyMs > 0 ? (frames / busyMs) * QUEUE_LIMITS.QUEUE_MS : QUEUE_LIMITS.MAX_FRAMES);

export interface RecvQueue {
  /** Datagrams the kernel queue holds now. */
  frames(): number;
  /** Called on traffic with the relay's count of frames in; re-sizes at most every MEASURE_MS. */
  measure(framesIn: number): void;
  /** Datagrams the kernel dropped because the queue was full (0 where /proc is not there). */
  kernelDrops(): number;
}

/** Sizes `socket`'s receive buffer (bound already) to QUEUE_MS and keeps it so. */
export function boundRecvQueue(socket: dgram.Socket): RecvQueue {
  let frames: number = QUEUE_LIMITS.INITIAL_FRAMES;
  const apply = (n: number): void => {
    frames = n;
    socket.setRecvBufferSize(bufferBytesFor(n));
  };
  apply(frames);
  let at = performance.now();
  let elu = performance.eventLoopUtilization();
  let seen = -1;
  const { address, port, family } = socket.address();
  return {
    frames: () => frames,
    measure(framesIn) {
      const now = performance.now();
      if (now - at < QUEUE_LIMITS.MEASURE_MS) return;
      const next = performance.eventLoopUtilization();
      const handled = framesIn - seen;
      if (seen >= 0 && handled >= QUEUE_LIMITS.MIN_SAMPLE_FRAMES) {
        const n = Math.min(
          framesForDelay(handled, next.active - elu.active),
          Math.round(frames * QUEUE_LIMITS.MAX_GROWTH),
        );
        if (n !== frames) apply(n);
      }
      at = now;
      elu = next;
      seen = framesIn;
    },
    kernelDrops: () => udpDrops(address, port, family === 'IPv6'),
  };
}

/** The "drops" column of the socket bound to address:port in /proc/self/net/udp (or udp6). */
export function udpDrops(address: string, port: number, ipv6: boolean): number {
  let table: string;
  try {
    table = readFileSync(`/proc/self/net/${ipv6 ? 'udp6' : 'udp'}`, 'utf8');
  } catch {
    return 0; // not Linux: the kernel's drops are not visible
  }
  const local = `${procAddress(address, ipv6)}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of table.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] === local) return Number(f[12]) || 0;
  }
  return 0;
}

/** An address as /proc/net/udp prints it: the bytes of each 32-bit word in host (little-endian) order. */
function procAddress(address: string, ipv6: boolean): string {
  const bytes = ipv6 ? ipv6Bytes(address) : address.split('.').map(Number);
  const words: string[] = [];
  for (let i = 0; i < bytes.length; i += 4) {
    words.push(
      bytes
        .slice(i, i + 4)
        .reverse()
        .map((b) => b.toString(16).toUpperCase().padStart(2, '0'))
        .join(''),
    );
  }
  return words.join('');
}

function ipv6Bytes(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  return all.flatMap((g) => {
    const v = Number.parseInt(g, 16);
    return [v >> 8, v & 0xff];
  });
}
