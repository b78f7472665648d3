// Phase 2's order of preference (spec §3.4): the most free CPU first, ties to the first node in tab
// order. A binary heap over the placeable nodes in that order, so a pod that fits the preferred node
// — the common case — is placed in O(log nodes) instead of a scan of every node: placing 10,000 new
// pods on 10,000 nodes (the registration storm of bench/sheets-scale) scanned 10^8 nodes in one
// reconcile, a second of the event loop. Items are numbered 0..n-1 in tab order (the number breaks
// ties) and read through `free`, so a node costs no wrapper object.

export class FreeHeap {
  readonly #heap: Int32Array; // item numbers, heap-ordered
  readonly #pos: Int32Array; // item number → its place in #heap
  readonly #free: (item: number) => number;

  /** Items 0..n-1; `free(i)` is item i's free CPU now — call update(i) after it changes. */
  constructor(n: number, free: (item: number) => number) {
    this.#free = free;
    this.#heap = new Int32Array(n);
    this.#pos = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      this.#heap[i] = i;
      this.#pos[i] = i;
    }
    for (let i = (n >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  /** The preferred item: largest free, then lowest number; -1 when there is none. */
  top(): number {
    return this.#heap.length > 0 ? this.#heap[0] : -1;
  }

  /** Restore the order after item's free CPU changed (either way). */
  update(item: number): void {
    this.#up(this.#pos[item]);
    this.#down(this.#pos[item]);
  }

  // item a before item b in phase 2's order
  #before(a: number, b: number): boolean {
    const fa = this.#free(a);
    const fb = this.#free(b);
    return fa > fb || (fa === fb && a < b);
  }

  #swap(i: number, j: number): void {
    const h = this.#heap;
    const t = h[i];
    h[i] = h[j];
    h[j] = t;
    this.#pos[h[i]] = i;
    this.#pos[h[j]] = j;
  }

  #up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#before(this.#heap[i], this.#heap[p])) return;
      this.#swap(i, p);
      i = p;
    }
  }

  #down(i: number): void {
    const h = this.#heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.#before(h[l], h[m])) m = l;
      if (r < h.length && this.#before(h[r], h[m])) m = r;
      if (m === i) return;
      this.#swap(i, m);
      i = m;
    }
  }
}
