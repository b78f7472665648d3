// Children the operator does not watch (a plane's ServiceAccount, Role and RoleBinding: no
// cluster-wide informer for three small objects per plane) had to be read from the API server on
// every reconcile of their machine to know they are still as desired. A resync of 1,000 clusters'
// machines was then 3,000 GETs at once (#32's overload phase counted 3,021 requests in a 15 s
// pause). This remembers, per machine, what was last verified against the server and when: the
// same desired objects are read again only once `recheckMs` has passed — or at once when the
// desired objects change (another generation of the machine, a new owner uid).

export const CHECKED_LIMITS = {
  // One resync period (informer.ts, 10 min): a resync reads them at most once a period, spread
  // over it (resync.ts), not 3,000 GETs at once; one deleted by someone else is put back by the
  // next resync after that, as anything else the operator does not watch (the plane keeps its pod
  // meanwhile; only a new pod would lack its token's rights), and at once when the machine changes.
  recheckMs: 10 * 60_000,
} as const;

export class CheckedRecently {
  private readonly checked = new Map<string, { desired: string; atMs: number }>();
  private readonly recheckMs: number;
  private readonly now: () => number;

  constructor(recheckMs: number = CHECKED_LIMITS.recheckMs, now: () => number = Date.now) {
    this.recheckMs = recheckMs;
    this.now = now;
  }

  /** True when `desired` was verified for `key` less than recheckMs ago. */
  fresh(key: string, desired: string): boolean {
    const c = this.checked.get(key);
    return !!c && c.desired === desired && this.now() - c.atMs < this.recheckMs;
  }

  /** `desired` is on the server for `key` now (read, and written where it differed). */
  verified(key: string, desired: string): void {
    this.checked.set(key, { desired, atMs: this.now() });
  }

  /** The object is gone (or its children conflict): read them again next time. */
  forget(key: string): void {
    this.checked.delete(key);
  }

  get size(): number {
    return this.checked.size;
  }
}
