// Time behind an interface, so rules like "forgotten after 60 s" can be tested without waiting.

/** Milliseconds from an arbitrary origin; only differences matter. */
export interface Clock {
  now(): number;
}

/** Monotonic process time (never jumps with the wall clock). */
export const systemClock: Clock = { now: () => performance.now() };

/** A clock that moves only when told to. */
export class ManualClock implements Clock {
  private t: number;
  constructor(startMs = 0) {
    this.t = startMs;
  }
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    if (ms < 0) throw new RangeError('a clock does not go back');
    this.t += ms;
  }
}
