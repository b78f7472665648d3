// When the API server comes back, every informer waiting out its backoff tries again at once.
// Each informer backs off on its own (200 ms doubling to 10 s): after a restart, the last of
// them could sleep up to 10 s past the server being ready, and a change waited for the slowest
// one (14 s after ready at 100 OberonKubes). The first informer that reaches the server again
// wakes the others; those whose resourceVersion is gone then LIST in turn (relist-gate.ts).

export class Reconnect {
  private sleepers: Array<() => void> = [];

  /** An informer that had failed reached the server again: the sleeping ones try now. */
  reached(): void {
    for (const wake of this.sleepers.splice(0)) wake();
  }

  /** Resolves at the next reached(), or never; `signal` aborting forgets the waiter. */
  next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => resolve();
      this.sleepers.push(wake);
      signal.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((w) => w !== wake);
        },
        { once: true },
      );
    });
  }

  /** Informers asleep now (tests). */
  get sleeping(): number {
    return this.sleepers.length;
  }
}
