// Replay protection of KubeNet (kube-on-oberon spec §3.4): each receiver remembers, per sender,
// the last accepted 16-bit counter and when it accepted it. A counter is fresh when it is
// "newer" in serial-number arithmetic, or when the sender has been silent longer than the TTL
// (it may have restarted and re-seeded its counter). The plane's TTL is ours, longer (#28.4): its
// counter survives restarts on its disk, so only a replay could go back after a short silence.
import { LIMITS } from './wire.ts';

/** The pseudo-sender of assignments and specs (the plane uses one counter for both). */
export const PLANE_SENDER = '*plane';

/** How a counter was judged. */
export type Freshness =
  | 'new' // sender unknown: learned and accepted
  | 'newer' // 0 < d < 32768: accepted
  | 'relearned' // not newer, but the sender was silent > TTL (the plane: > plane TTL): accepted and learned again
  | 'stale'; // refused; nothing updated

/** d = (c − last) MOD 65536, the serial-number distance of counter c past `last`. */
export function counterDistance(c: number, last: number): number {
  return (((c - last) % LIMITS.COUNTER_MODULUS) + LIMITS.COUNTER_MODULUS) % LIMITS.COUNTER_MODULUS;
}

/** True when c is newer than last: 0 < d < 32768. */
export function counterNewer(c: number, last: number): boolean {
  const d = counterDistance(c, last);
  return d > 0 && d < LIMITS.COUNTER_WINDOW;
}

/** The next counter after c (wraps 0xFFFF → 0). */
export function nextCounter(c: number): number {
  return (c + 1) % LIMITS.COUNTER_MODULUS;
}

interface Entry {
  name: string;
  last: number;
  at: number;
}

/**
 * Which entry an unknown sender takes when the table is full:
 * - `stalest`: the entry accepted longest ago (our KubeNet.Mod), so 32 fresh names sprayed by an
 *   intruder cannot push out the plane that spoke a moment ago;
 * - `first`: entry 0, as the reference KubeNet does.
 */
export type Eviction = 'stalest' | 'first';

/** The receiver's table of senders, `capacity` entries (32 on the machines). */
export class FreshnessTable {
  readonly capacity: number;
  readonly ttlMs: number;
  /** The silence after which the plane (PLANE_SENDER) is learned again: ours 180 s, the reference's 5 s. */
  readonly planeTtlMs: number;
  readonly eviction: Eviction;
  private readonly entries: Entry[] = [];

  constructor(opts: { capacity?: number; ttlMs?: number; planeTtlMs?: number; eviction?: Eviction } = {}) {
    this.capacity = opts.capacity ?? LIMITS.FRESHNESS_PEERS;
    this.ttlMs = opts.ttlMs ?? LIMITS.TTL_MS;
    this.planeTtlMs = opts.planeTtlMs ?? LIMITS.PLANE_TTL_MS;
    this.eviction = opts.eviction ?? 'stalest';
    if (this.capacity < 1) throw new RangeError('a freshness table needs at least one entry');
  }

  /** Judges without changing anything. */
  judge(sender: string, counter: number, nowMs: number): Freshness {
    const e = this.entries.find((x) => x.name === sender);
    if (!e) return 'new';
    if (counterNewer(counter, e.last)) return 'newer';
    if (nowMs - e.at > (sender === PLANE_SENDER ? this.planeTtlMs : this.ttlMs)) return 'relearned';
    return 'stale';
  }

  /** Judges and, when accepted, stores the counter and the time. A refusal updates nothing. */
  accept(sender: string, counter: number, nowMs: number): Freshness {
    const verdict = this.judge(sender, counter, nowMs);
    if (verdict === 'stale') return verdict;
    const e = this.entries.find((x) => x.name === sender);
    if (e) {
      e.last = counter;
      e.at = nowMs;
    } else if (this.entries.length < this.capacity) {
      this.entries.push({ name: sender, last: counter, at: nowMs });
    } else {
      let victim = 0;
      if (this.eviction === 'stalest') {
        for (let i = 1; i < this.entries.length; i++) {
          if (this.entries[i].at - this.entries[victim].at < 0) victim = i;
        }
      }
      this.entries[victim] = { name: sender, last: counter, at: nowMs };
    }
    return verdict;
  }

  /** The last accepted counter of a sender, if known. */
  last(sender: string): number | undefined {
    return this.entries.find((x) => x.name === sender)?.last;
  }

  get size(): number {
    return this.entries.length;
  }

  clear(): void {
    this.entries.length = 0;
  }
}

/** True for the verdicts that accept the message. */
export const isFresh = (f: Freshness): boolean => f !== 'stale';
