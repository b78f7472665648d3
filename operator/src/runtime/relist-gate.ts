// One LIST of a whole kind at a time across the informers of a process. After an API server
// restart every informer whose watch cannot resume lists again; all at once, 16 kinds and 14,000
// objects at 1,000 OberonKubes were parsed side by side (the operator's peak RSS, 377 MiB), and the
// server answered the burst with timeouts and 429s. In turn, each LIST has the server and the
// operator to itself, and the objects of one kind are the only ones in flight.

export const LIMITS = {
  concurrent: 1, // LISTs in flight at once: each holds a page of its kind while the cache is updated
} as const;

export class RelistGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly limit: number;

  constructor(limit: number = LIMITS.concurrent) {
    this.limit = Math.max(1, limit);
  }

  /** LISTs waiting for their turn (for tests and logs). */
  get queued(): number {
    return this.waiting.length;
  }

  /** Runs `fn` once fewer than the limit run; a failure of `fn` frees the turn too. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next)
        next(); // the turn passes on: `running` stays as it is
      else this.running--;
    }
  }
}
