// Phase 2's order of preference (spec §3.4): the most free CPU first, ties to the first node in tab
// order. A binary heap over the placeable nodes in that order, so a pod that fits the preferred node
// — the common case — is placed in O(log nodes) instead of a scan of every node: placing 10,000 new
// pods on 10,000 nodes (the registration storm of bench/sheets-scale) scanned 10^8 nodes in one
// reconcile, a second of the event loop.

export interface HeapItem {
  /** Position in the Nodes tab: breaks ties between equal free CPU. */
  readonly index: number;
  /** Free CPU now (cpu_total − allocated); read on every comparison, so update() after a change. */
  free(): number;
}

export class FreeHeap<T extends HeapItem> {
  readonly #items: T[] = [];
  readonly #pos = new Map<T, number>();

  constructor(items: Iterable<T>) {
    for (const it of items) {
      this.#pos.set(it, this.#items.length);
      this.#items.push(it);
    }
    for (let i = (this.#items.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  /** The preferred node: largest free(), then lowest index. */
  top(): T | undefined {
    return this.#items[0];
  }

  /** Restore the order after `it`'s free CPU changed (either way). */
  update(it: T): void {
    const i = this.#pos.get(it);
    if (i === undefined) return;
    this.#up(i);
    this.#down(this.#pos.get(it) as number);
  }

  // a before b in phase 2's order
  #before(a: T, b: T): boolean {
    const fa = a.free();
    const fb = b.free();
    return fa > fb || (fa === fb && a.index < b.index);
  }

  #swap(i: number, j: number): void {
    const h = this.#items;
    [h[i], h[j]] = [h[j], h[i]];
    this.#pos.set(h[i], i);
    this.#pos.set(h[j], j);
  }

  #up(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#before(this.#items[i], this.#items[p])) return;
      this.#swap(i, p);
      i = p;
    }
  }

  #down(i: number): void {
    const h = this.#items;
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
