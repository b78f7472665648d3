// The Events tab of a spreadsheet cluster: rows appended by every change, trimmed to the newest
// `max` once it grows `trimSlack` past that (the tab would otherwise grow forever).

import type { Tx } from '../store/types.ts';

export interface EventRow {
  kind: string;
  object: string;
  message: string;
}

export class EventLog {
  /** Rows in the tab, tracked rather than re-read: reading the whole tab per write costs O(events). */
  #count: number | undefined;

  readonly max: number;
  readonly trimSlack: number;

  constructor(max: number, trimSlack: number) {
    this.max = max;
    this.trimSlack = trimSlack;
  }

  /** Someone else edited the workbook: count the rows again at the next write. */
  forget(): void {
    this.#count = undefined;
  }

  write(tx: Tx, events: EventRow[], now: number): void {
    if (events.length === 0) return;
    const ts = new Date(now * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    this.#count ??= tx.rows('Events').length;
    for (const e of events) tx.insert('Events', { ts, kind: e.kind, object: e.object, message: e.message });
    this.#count += events.length;
    if (this.#count > this.max + this.trimSlack) {
      // The oldest rows go and the rest stay the same row objects (deleteWhere keeps them; a
      // replaceAll rebuilt all 5,000), so the journal records the trim as one move, not every row.
      const all = tx.rows('Events').length;
      let drop = all - this.max;
      tx.deleteWhere('Events', () => drop-- > 0);
      this.#count = Math.min(all, this.max);
    }
  }
}
